"""The data contract: one module per file family, each with its models, readers (which validate) and writers (atomic).

scene, sequence (incl. frames), openlex3d (GT), labels, predictions (incl. text features), results, benchbot, classes,
crops (incl. close-ups), labelstudio (exports, seats, tasks, ledger), records (validation, release, method, caches),
params, sources (Replica's own files), hm3d (HM3D semantic.txt), scannetpp (ScanNet++ segments), scene_graph (tiermap's graphs), method_graphs (ConceptGraphs and BBQ graphs), vqa,
loaders (other tools' configs beside each sequence), layout (where a dataset's files live). `base` holds the error type
and JSON helpers.
"""
