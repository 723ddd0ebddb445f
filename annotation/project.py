"""The labelling project: config shown to annotators (crop, context gallery, three text fields) and instructions."""
from __future__ import annotations

from typing import Any

from annotation.ls_client import Admin
from annotation.ls_server import LabelStudioError, document_root, read_credentials
from tiermap.formats.layout import DatasetPaths

FIELDS = {"synonyms": "synonyms", "depictions": "depictions", "visually_similar": "vis_sim"}
"""Label Studio text-field name → tidy-table category."""

INSTRUCTIONS = """<h3>Labelling instructions (OpenLex3D)</h3>
<p>You see several views of one object. In the first view the background is removed to highlight the object;
the others show it in context (outlined). Label the object with the three categories below.</p>
<p><b>Synonyms.</b> The most accurate label for the object and closely related synonyms, e.g. <i>sofa, couch, settee</i> ·
<i>screen, monitor, computer</i> · <i>glasses, spectacles</i>. For bottles and containers, add both the content and the
container, e.g. <i>ketchup, ketchup bottle</i>.</p>
<p><b>Depictions.</b> If the object shows a distinct pattern, image or design of another object or concept, name it:
a painting, figurine, toy or book showing a cat → <i>cat</i>. Legible words and brands go here too.</p>
<p><b>Visually similar.</b> Objects that are not synonyms but look similar (colour, shape). They should be wrong,
with an understandable visual connection, e.g. <i>chair, armchair</i> · <i>television</i> · <i>sunglasses, goggles</i>.</p>
<p><b>Notes.</b> Separate labels with commas. A label may have several words separated by a space (<i>coffee mug</i>,
<i>ice cream</i>). Give as many appropriate labels as you can. Leave a field blank if nothing fits; you may leave all
fields blank. If the views are unclear or show different objects, leave all fields blank.</p>"""

LABEL_CONFIG = """<View>
  <Header value="Object $object_id in scene $scene ($key)"/>
  <View style="display: flex; gap: 12px; align-items: flex-start">
    <View style="flex: 1"><Header value="Object (background removed)" size="6"/><Image name="crop" value="$image" zoom="true"/></View>
    <View style="flex: 2"><Header value="Context views" size="6"/><Image name="context" valueList="$context_images"/></View>
  </View>
  <Header value="Synonyms: the object's name and close synonyms, comma-separated (sofa, couch, settee)" size="5"/>
  <TextArea name="synonyms" toName="crop" editable="true" maxSubmissions="1" rows="2" placeholder="e.g. mug, cup, coffee mug"/>
  <Header value="Depictions: what is shown on it (patterns, images, legible words, brands), comma-separated" size="5"/>
  <TextArea name="depictions" toName="crop" editable="true" maxSubmissions="1" rows="2" placeholder="e.g. cat, polka dots"/>
  <Header value="Visually similar: wrong but similar-looking objects, comma-separated" size="5"/>
  <TextArea name="visually_similar" toName="crop" editable="true" maxSubmissions="1" rows="2" placeholder="e.g. vase, jar"/>
</View>"""


def admins(ds: DatasetPaths) -> list[Admin]:
    """An admin client per seat, in seat order; a clear error when the dataset has no annotators yet."""
    cred = read_credentials(ds)
    if not cred.seats:
        raise LabelStudioError(f"dataset {ds.name!r} has no annotators yet: add them with `tiermap annotate users add EMAIL...` "
                               "(each gets a Label Studio seat of their own)")
    return [Admin(s) for s in cred.seats]


def project_title(ds: DatasetPaths) -> str:
    """One project per dataset on every seat."""
    return f"tiermap {ds.name}"


def find_project(ls: Admin, ds: DatasetPaths) -> dict[str, Any] | None:
    """The dataset's project on a seat, if it exists."""
    return next((p for p in ls.projects() if p["title"] == project_title(ds)), None)


def project_fields(ds: DatasetPaths) -> dict[str, Any]:
    """The project as push sets it (one annotation per task: each seat holds one annotator)."""
    return {"title": project_title(ds), "label_config": LABEL_CONFIG, "expert_instruction": INSTRUCTIONS,
            "show_instruction": True, "maximum_annotations": 1, "show_collab_predictions": True,
            "description": f"Tiered object labels for dataset {ds.name} (OpenLex3D protocol)"}


def ensure_project(ls: Admin, ds: DatasetPaths, scenes: list[str]) -> int:
    """Create or restore the seat's project (config, instructions) and a local-files storage per scene's crops."""
    fields = project_fields(ds)
    proj = find_project(ls, ds)
    if proj is None:
        pid = ls.create_project(**fields)
    else:
        pid = int(proj["id"])
        if any(proj.get(k) != v for k, v in fields.items()):
            ls.update_project(pid, **fields)
    have = {s.get("path") for s in ls.local_storages(pid)}
    for scene in scenes:
        path = str((document_root(ds) / scene).resolve())
        if path not in have:
            ls.add_local_storage(pid, path, f"crops {scene}")
    return pid


def textarea_result(answers: dict[str, str]) -> list[dict[str, Any]]:
    """Label Studio result items for the three text fields."""
    return [{"from_name": name, "to_name": "crop", "type": "textarea", "value": {"text": [answers[name]]}}
            for name in FIELDS if answers.get(name)]
