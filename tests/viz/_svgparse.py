"""Read the pictures back: parse the SVG with ElementTree, never compare strings."""

import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg):
    root = ET.fromstring(str(svg))
    assert root.tag == SVG + "svg"
    return root


def elements(root, tag, cls=None):
    out = []
    for e in root.iter(SVG + tag):
        if cls is None or cls in (e.get("class") or "").split():
            out.append(e)
    return out


def cells(root):
    return elements(root, "rect", "cell")


def title_of(e):
    t = e.find(SVG + "title")
    return None if t is None else t.text


def label_texts(root):
    """The cell labels (the <text> children of <g class="labels">), in drawing order."""
    out = []
    for g in elements(root, "g", "labels"):
        out.extend(t.text for t in g.iter(SVG + "text"))
    return out


def all_text(root):
    return [t.text or "" for t in root.iter(SVG + "text")]


def size(root):
    return float(root.get("width")), float(root.get("height"))
