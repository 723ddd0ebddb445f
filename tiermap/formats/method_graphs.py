"""Methods' scene graphs read into tiermap's SceneGraph: ConceptGraphs (scene_graph.json list; ali-dev obj_json/edge_json
pair) and BBQ node lists, plus the ConceptGraphs list writer the caption baseline uses.

Formats (from the methods' code):
- ConceptGraphs `generate-scenegraph-json`: `[{id, bbox_extent, bbox_center, possible_tags, object_tag, caption}]`
  (it rounds boxes to 0.1 m; `object_tag` is "invalid" when its LLM could not name the object). No edges.
- ConceptGraphs ali-dev `obj_json_<suffix>.json`: `{"object_k": {id, object_tag, object_caption, bbox_extent, bbox_center,
  bbox_volume}}` and `edge_json_<suffix>.json`: `{"edge_k": {edge_id, edge_description, num_detections, object_1_id,
  object_1_tag, object_2_id, object_2_tag, relationship}}`, an edge reading "object 1 `relationship` object 2".
- BBQ's describer: `[{id, bbox_extent, bbox_center, description}]` (boxes rounded to 0.1 m).
Method files carry more keys than read here; extra keys are ignored, missing or malformed ones are SchemaErrors.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from tiermap import atomic
from tiermap.formats.base import (
    NonNegInt,
    SchemaError,
    Vec3,
    _pydantic_error,
    dump_json,
    read_json,
)
from tiermap.formats.scene_graph import (
    GRAPH_FORMAT,
    SCENE_GRAPH_FILE,
    Extent,
    GraphEdge,
    GraphNode,
    SceneGraph,
)

COLOR_NAMES = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white", "gray", "beige",
               "silver", "gold")
"""Basic colour words a node's `colors` use."""
COLOR_ALIASES = {"grey": "gray", "violet": "purple", "golden": "gold", "cream": "beige", "tan": "beige"}
MATERIAL_NAMES = ("wood", "metal", "fabric", "leather", "glass", "plastic", "ceramic", "paper", "stone", "rubber")
"""Material words a node's `material` uses."""
MATERIAL_ALIASES = {"wooden": "wood", "metallic": "metal", "steel": "metal", "iron": "metal", "aluminium": "metal",
                    "aluminum": "metal", "brass": "metal", "cloth": "fabric", "textile": "fabric", "cotton": "fabric",
                    "woolen": "fabric", "wool": "fabric", "velvet": "fabric", "porcelain": "ceramic",
                    "cardboard": "paper", "marble": "stone", "granite": "stone", "concrete": "stone"}
CG_RELATIONSHIPS: dict[str, tuple[str, bool]] = {
    "on top of": ("on", False), "under": ("on", True),        # ali-dev VLM edges: ("1", "on top of", "2")
    "a on b": ("on", False), "b on a": ("on", True),          # ConceptGraphs' LLM relation vocabulary
    "a in b": ("inside", False), "b in a": ("inside", True),
    "next to": ("next_to", False),
}
"""ConceptGraphs relationship → (tiermap relation, reversed: object 2 is the subject). "next to" is stored both ways;
anything else ("none of these", free text) is ignored."""
OBJ_JSON_PREFIX, EDGE_JSON_PREFIX = "obj_json_", "edge_json_"
BBQ_LABEL_WORDS = 6
_CLAUSE = re.compile(r"[,;:.!?()]|\b(?:with|on|in|at|near|next to|under|above|below|behind|beside|against|inside|by|and)\b",
                     re.IGNORECASE)
_ARTICLE = re.compile(r"^(?:a|an|the)\s+", re.IGNORECASE)


def _words(names: Sequence[str], aliases: dict[str, str]) -> re.Pattern[str]:
    alts = sorted({*names, *aliases}, key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(map(re.escape, alts)) + r")\b", re.IGNORECASE)


_COLOR_RE, _MATERIAL_RE = _words(COLOR_NAMES, COLOR_ALIASES), _words(MATERIAL_NAMES, MATERIAL_ALIASES)


def text_attributes(text: str) -> tuple[list[str], str | None]:
    """Colour words (in order, once each) and the first material word of free text, normalised ("grey" → "gray")."""
    colors = [COLOR_ALIASES.get(w, w) for w in (m.group(1).lower() for m in _COLOR_RE.finditer(text))]
    mat = _MATERIAL_RE.search(text)
    return list(dict.fromkeys(colors)), (MATERIAL_ALIASES.get(mat.group(1).lower(), mat.group(1).lower()) if mat else None)


def bbq_label(description: str) -> str:
    """A short noun phrase from a BBQ description: its first clause (cut at punctuation, "with", "on", ...), without a
    leading article, lowercased, at most BBQ_LABEL_WORDS words; "object" if nothing is left."""
    head = _ARTICLE.sub("", _CLAUSE.split(description.strip(), maxsplit=1)[0].strip())
    return " ".join(head.lower().split()[:BBQ_LABEL_WORDS]) or "object"


class _Raw(BaseModel):
    """A method's record: keys this reader does not use are ignored."""

    model_config = ConfigDict(extra="ignore")


class ConceptGraphsNode(_Raw):
    """One node of ConceptGraphs' scene_graph.json."""

    id: NonNegInt
    bbox_extent: Extent
    bbox_center: Vec3
    possible_tags: list[str] = []
    object_tag: str
    caption: str = ""


class ConceptGraphsObject(_Raw):
    """One object of ConceptGraphs ali-dev's obj_json_*.json."""

    id: NonNegInt
    object_tag: str
    object_caption: str = ""
    bbox_extent: Extent
    bbox_center: Vec3


class ConceptGraphsEdge(_Raw):
    """One edge of ConceptGraphs ali-dev's edge_json_*.json: object 1 `relationship` object 2."""

    object_1_id: NonNegInt
    object_2_id: NonNegInt
    relationship: str


class BBQNode(_Raw):
    """One node of BBQ's describer output."""

    id: NonNegInt
    bbox_extent: Extent
    bbox_center: Vec3
    description: str


def _validate(adapter: TypeAdapter[Any], path: Path, data: Any) -> Any:
    try:
        return adapter.validate_python(data)
    except ValidationError as err:
        raise _pydantic_error(path, err) from None


def _unique(path: Path, keys: list[str], ids: list[int]) -> None:
    seen: dict[int, str] = {}
    for key, i in zip(keys, ids, strict=True):
        if i in seen:
            raise SchemaError(path, f"{key}.id", f"unique node ids (also at {seen[i]})", i)
        seen[i] = key


def _graph(path: Path, source: str, nodes: list[GraphNode], edges: list[GraphEdge] | None = None) -> SceneGraph:
    try:
        return SceneGraph(source=source, nodes=nodes, edges=edges or [])
    except ValidationError as err:
        raise _pydantic_error(path, err) from None


def _cg_label(tag: str, tags: list[str]) -> str:
    tag = tag.strip()
    if tag and tag.lower() != "invalid":
        return tag
    return next((t.strip() for t in tags if t.strip()), "object")


def _conceptgraphs(path: Path, data: Any) -> SceneGraph:
    raw: list[ConceptGraphsNode] = _validate(TypeAdapter(list[ConceptGraphsNode]), path, data)
    _unique(path, [str(k) for k in range(len(raw))], [n.id for n in raw])
    nodes = []
    for n in raw:
        colors, material = text_attributes(f"{n.object_tag} {n.caption}")
        nodes.append(GraphNode(id=n.id, label=_cg_label(n.object_tag, n.possible_tags), synonyms=n.possible_tags,
                               caption=n.caption, colors=colors, material=material, center=n.bbox_center, extent=n.bbox_extent))
    return _graph(path, "conceptgraphs", nodes)


def _bbq(path: Path, data: Any) -> SceneGraph:
    raw: list[BBQNode] = _validate(TypeAdapter(list[BBQNode]), path, data)
    _unique(path, [str(k) for k in range(len(raw))], [n.id for n in raw])
    nodes = []
    for n in raw:
        colors, material = text_attributes(n.description)
        nodes.append(GraphNode(id=n.id, label=bbq_label(n.description), caption=n.description, colors=colors,
                               material=material, center=n.bbox_center, extent=n.bbox_extent))
    return _graph(path, "bbq", nodes)


def _objects(path: Path, data: Any, edge_json: Path | None) -> SceneGraph:
    raw: dict[str, ConceptGraphsObject] = _validate(TypeAdapter(dict[str, ConceptGraphsObject]), path, data)
    _unique(path, list(raw), [o.id for o in raw.values()])
    nodes = []
    for o in raw.values():
        colors, material = text_attributes(f"{o.object_tag} {o.object_caption}")
        tag = o.object_tag.strip()
        nodes.append(GraphNode(id=o.id, label=_cg_label(tag, []), synonyms=[tag] if tag else [], caption=o.object_caption,
                               colors=colors, material=material, center=o.bbox_center, extent=o.bbox_extent))
    edges: list[GraphEdge] = []
    if edge_json is not None:
        known = {o.id for o in raw.values()}
        found: set[tuple[str, int, int]] = set()
        edge_data = read_json(edge_json)
        for key, e in _validate(TypeAdapter(dict[str, ConceptGraphsEdge]), edge_json, edge_data).items():
            for field, oid in (("object_1_id", e.object_1_id), ("object_2_id", e.object_2_id)):
                if oid not in known:
                    raise SchemaError(edge_json, f"{key}.{field}", f"the id of an object in {path.name}", oid)
            rel = CG_RELATIONSHIPS.get(" ".join(e.relationship.lower().split()))
            if rel is None or e.object_1_id == e.object_2_id:
                continue  # no relation tiermap asks about, or ConceptGraphs' self-loop
            name, rev = rel
            s, o = (e.object_2_id, e.object_1_id) if rev else (e.object_1_id, e.object_2_id)
            found.add((name, s, o))
            if name == "next_to":
                found.add((name, o, s))
        edges = [GraphEdge(rel=r, subject=s, object=o) for r, s, o in sorted(found, key=lambda t: (t[1], t[0], t[2]))]
    return _graph(path, "conceptgraphs-edges", nodes, edges)


def read_conceptgraphs(path: Path | str) -> SceneGraph:
    """ConceptGraphs' scene_graph.json (a node list) as a SceneGraph without edges (the executor computes them from boxes)."""
    path = Path(path)
    return _conceptgraphs(path, read_json(path))


def read_conceptgraphs_objects(obj_json: Path | str, edge_json: Path | str | None = None) -> SceneGraph:
    """ConceptGraphs ali-dev obj_json_*.json (+ its edge_json_*.json): "on top of"/"under"/"a in b"/... become edges."""
    obj_json = Path(obj_json)
    return _objects(obj_json, read_json(obj_json), None if edge_json is None else Path(edge_json))


def read_bbq(path: Path | str) -> SceneGraph:
    """BBQ's node list; label = bbq_label(description), caption = the description."""
    path = Path(path)
    return _bbq(path, read_json(path))


def edge_json_for(obj_json: Path) -> Path | None:
    """The edge_json_<suffix>.json beside obj_json_<suffix>.json, if it exists."""
    edge = obj_json.with_name(EDGE_JSON_PREFIX + obj_json.name.removeprefix(OBJ_JSON_PREFIX))
    return edge if edge.is_file() else None


EXPECTED = ("a tiermap scene graph, a ConceptGraphs scene_graph.json node list (object_tag), a BBQ node list "
            "(description) or ConceptGraphs obj_json objects")


def read_scene_graph(path: Path | str) -> SceneGraph:
    """Any supported scene graph by its content: tiermap, ConceptGraphs list, BBQ list, ConceptGraphs obj_json (+ edges),
    or a folder holding scene_graph.json or one obj_json_*.json."""
    path = Path(path)
    if path.is_dir():
        if (path / SCENE_GRAPH_FILE).is_file():
            return read_scene_graph(path / SCENE_GRAPH_FILE)
        objs = sorted(path.glob(f"{OBJ_JSON_PREFIX}*.json"))
        if len(objs) != 1:
            raise SchemaError(path, "<folder>", f"{SCENE_GRAPH_FILE} or exactly one {OBJ_JSON_PREFIX}*.json",
                              [p.name for p in objs] or None)
        path = objs[0]
    data = read_json(path)
    if path.name.startswith(OBJ_JSON_PREFIX):
        return _objects(path, data, edge_json_for(path))
    if isinstance(data, dict) and "format" in data:
        if data["format"] != GRAPH_FORMAT:
            raise SchemaError(path, "format", f"'{GRAPH_FORMAT}'", data["format"] if isinstance(data["format"], str) else None)
        return _validate(TypeAdapter(SceneGraph), path, data)
    if isinstance(data, dict) and data and all(isinstance(v, dict) and "object_tag" in v for v in data.values()):
        return _objects(path, data, None)
    if isinstance(data, list) and all(isinstance(d, dict) for d in data):
        if not data or "object_tag" in data[0]:
            return _conceptgraphs(path, data)
        if "description" in data[0]:
            return _bbq(path, data)
        raise SchemaError(path, "0", "a ConceptGraphs node (with object_tag) or a BBQ node (with description)")
    raise SchemaError(path, "<root>", EXPECTED, type(data).__name__)


def _cg_dict(n: dict[str, Any] | BaseModel) -> Any:
    if isinstance(n, GraphNode):
        return {"id": n.id, "bbox_extent": n.extent, "bbox_center": n.center, "possible_tags": n.synonyms or [n.label],
                "object_tag": n.label, "caption": n.caption}
    return n.model_dump() if isinstance(n, BaseModel) else n


def _mm(values: list[float]) -> list[float]:
    return [round(float(v), 3) + 0.0 for v in values]  # + 0.0: no "-0.0" in the file


def write_conceptgraphs_graph(nodes: Sequence[dict[str, Any] | BaseModel], path: Path | str) -> Path:
    """Write nodes as ConceptGraphs' scene_graph.json list atomically (boxes kept to the millimetre, not 0.1 m, so
    relations computed from them survive)."""
    path = Path(path)
    recs: list[ConceptGraphsNode] = _validate(TypeAdapter(list[ConceptGraphsNode]), path, [_cg_dict(n) for n in nodes])
    _unique(path, [str(k) for k in range(len(recs))], [r.id for r in recs])
    out = [{"id": r.id, "bbox_extent": _mm(r.bbox_extent), "bbox_center": _mm(r.bbox_center),
            "possible_tags": list(r.possible_tags), "object_tag": r.object_tag, "caption": r.caption} for r in recs]
    return atomic.write_text(path, dump_json(out))
