# Makes the web host's icon font subset (see README.md): the Outlined font's
# FILL=0 instance with only the glyphs of the names in icons.txt, their
# ligatures, and the letters those ligatures are typed with. Run by
# go generate (package iconsubset); usage: python3 subset.py FONT ICONS OUT.
import sys

from fontTools import subset
from fontTools.ttLib import TTFont
from fontTools.varLib import instancer

font_path, icons_path, out_path = sys.argv[1:4]
names = [l.strip() for l in open(icons_path) if l.strip() and not l.startswith("#")]
font = TTFont(font_path)


def ligatures(font):
    """The glyph each ligature (an icon name typed in letters) draws."""
    letters = {g: chr(c) for c, g in font.getBestCmap().items() if c < 128}
    out = {}
    for lookup in font["GSUB"].table.LookupList.Lookup:
        for st in lookup.SubTable:
            if st.LookupType == 7:
                st = st.ExtSubTable
            if st.LookupType != 4:
                continue
            for first, ligs in st.ligatures.items():
                for lig in ligs:
                    name = letters.get(first, "?") + "".join(letters.get(c, "?") for c in lig.Component)
                    out.setdefault(name, lig.LigGlyph)
    return out


drawn = ligatures(font)
missing = [n for n in names if n not in drawn]
if missing:
    sys.exit("icons.txt names icons the font does not have: " + ", ".join(missing))
glyphs = sorted({drawn[n] for n in names})
if "fvar" in font:
    font = instancer.instantiateVariableFont(font, {"FILL": 0})
options = subset.Options()
options.flavor = "woff2"
options.layout_features = ["rlig", "rclt", "liga"]
options.layout_closure = False
options.name_IDs = ["*"]
options.notdef_outline = True
sub = subset.Subsetter(options)
sub.populate(glyphs=glyphs, text="abcdefghijklmnopqrstuvwxyz0123456789_")
sub.subset(font)
font.flavor = "woff2"
font.recalcTimestamp = False  # the same input makes the same file
font.save(out_path)
