#!/usr/bin/env python3
"""Generates src/core/unicode_data.inc from the Unicode Character Database.

    tools/gen_unicode.py [UCD_DIR [OUTPUT]]     (default /usr/share/unicode, Debian's
                                                 unicode-data package)

The tokenizer's normalization is part of the on-disk fingerprint format, so it comes from a
table generated once from a pinned UCD version and committed, never from the system's ICU
at run time. The script refuses any UCD other than the pinned version: regenerating from
another one is a deliberate format change.

Per code point it records: the class the tokenizer uses (symbols count as tokens only when
they are emoji: gc=So with Extended_Pictographic or Emoji_Presentation, so that lines of
box-drawing characters in tables cannot outweigh the words of a document), the canonical combining class, and
the normalized mapping = fixpoint of (full compatibility decomposition, full case folding).
Hangul syllables are deliberately not decomposed.
"""
import os
import re
import sys

VERSION = "15.0.0"
UNSPACED_SCRIPTS = {
    "Han", "Hiragana", "Katakana", "Bopomofo", "Thai", "Lao", "Khmer", "Myanmar", "Yi",
    "Tai_Tham", "New_Tai_Lue", "Tai_Le", "Tai_Viet", "Javanese", "Balinese", "Tangut",
    "Nushu", "Khitan_Small_Script",
}
SEPARATOR, WORD, UNSPACED, MARK, IGNORABLE = range(5)
MAX_CP = 0x110000
BLOCK = 128


def read(ucd, name):
    path = os.path.join(ucd, name)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return text


def check_version(ucd):
    for name in ("DerivedCoreProperties.txt", "Scripts.txt", "ScriptExtensions.txt",
                 "CaseFolding.txt"):
        head = read(ucd, name)[:200]
        if VERSION not in head:
            sys.exit(f"{name} is not Unicode {VERSION}: refusing to change the format")
    if VERSION not in read(ucd, "ReadMe.txt"):
        sys.exit(f"ReadMe.txt does not name Unicode {VERSION}")
    if "Emoji Version " + VERSION.rsplit(".", 1)[0] not in read(ucd, "emoji/emoji-data.txt")[:600]:
        sys.exit(f"emoji/emoji-data.txt is not Emoji {VERSION}: refusing to change the format")


def ranges(text):
    """Yields (first, last, fields) for each data line of a UCD property file."""
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = [f.strip() for f in line.split(";")]
        cps = fields[0].split("..")
        first = int(cps[0], 16)
        last = int(cps[-1], 16)
        yield first, last, fields[1:]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ucd = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/unicode"
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "src", "core", "unicode_data.inc")
    check_version(ucd)

    gc = ["Cn"] * MAX_CP
    ccc = [0] * MAX_CP
    decomp = {}
    first = None
    for line in read(ucd, "UnicodeData.txt").splitlines():
        f = line.split(";")
        cp = int(f[0], 16)
        if f[1].endswith(", First>"):
            first = cp
            continue
        lo = first if f[1].endswith(", Last>") else cp
        first = None
        for c in range(lo, cp + 1):
            gc[c] = f[2]
            ccc[c] = int(f[3])
        if f[5]:
            parts = f[5].split()
            if parts[0].startswith("<"):
                parts = parts[1:]
            decomp[cp] = [int(p, 16) for p in parts]

    fold = {}
    for lo, _, fields in ranges(read(ucd, "CaseFolding.txt")):
        if fields[0] in ("C", "F"):
            fold[lo] = [int(p, 16) for p in fields[1].split()]

    ignorable = [False] * MAX_CP
    for lo, hi, fields in ranges(read(ucd, "DerivedCoreProperties.txt")):
        if fields[0] == "Default_Ignorable_Code_Point":
            for c in range(lo, hi + 1):
                ignorable[c] = True

    pictographic = [False] * MAX_CP
    for lo, hi, fields in ranges(read(ucd, "emoji/emoji-data.txt")):
        if fields[0] in ("Extended_Pictographic", "Emoji_Presentation"):
            for c in range(lo, hi + 1):
                pictographic[c] = True

    unspaced_script = [False] * MAX_CP
    for lo, hi, fields in ranges(read(ucd, "Scripts.txt")):
        if fields[0] in UNSPACED_SCRIPTS:
            for c in range(lo, hi + 1):
                unspaced_script[c] = True
    aliases = {}
    for line in read(ucd, "PropertyValueAliases.txt").splitlines():
        m = re.match(r"sc\s*;\s*(\w+)\s*;\s*(\w+)", line)
        if m:
            aliases[m.group(1)] = m.group(2)
    for lo, hi, fields in ranges(read(ucd, "ScriptExtensions.txt")):
        if any(aliases.get(s, s) in UNSPACED_SCRIPTS for s in fields[0].split()):
            for c in range(lo, hi + 1):
                unspaced_script[c] = True

    def nfkd(cp):
        if 0xAC00 <= cp <= 0xD7A3 or cp not in decomp:
            return [cp]
        return [x for d in decomp[cp] for x in nfkd(d)]

    def normalize(cp):
        seq = [cp]
        while True:
            nxt = [y for x in seq for y in nfkd(x)]
            nxt = [y for x in nxt for y in fold.get(x, [x])]
            if nxt == seq:
                return seq
            seq = nxt

    def cls(cp):
        if ignorable[cp]:
            return IGNORABLE
        g = gc[cp]
        if g[0] == "M":
            return MARK
        if g[0] in "LN":
            return UNSPACED if unspaced_script[cp] else WORD
        if g == "So" and pictographic[cp]:
            return UNSPACED  # emoji are words of their own; box drawing, arrows... are not
        return SEPARATOR

    records = {}   # (cls, ccc, offset, len) -> index
    record_list = []
    pool = []
    pool_index = {}
    props = [0] * MAX_CP
    max_len = 0
    for cp in range(MAX_CP):
        c = cls(cp)
        mapping = [] if c == IGNORABLE else normalize(cp)
        if mapping == [cp]:
            mapping = []
        off = 0
        if mapping:
            max_len = max(max_len, len(mapping))
            key = tuple(mapping)
            if key not in pool_index:
                pool_index[key] = len(pool)
                pool.extend(mapping)
            off = pool_index[key]
        rec = (c, ccc[cp], off, len(mapping))
        if rec not in records:
            records[rec] = len(record_list)
            record_list.append(rec)
        props[cp] = records[rec]

    # Every mapped code point maps to itself and is not ignorable.
    for cp in pool:
        c, _, _, n = record_list[props[cp]]
        assert n == 0 and c != IGNORABLE, hex(cp)
    assert len(record_list) < 65536 and len(pool) < 65536

    blocks = {}
    stage1 = []
    stage2 = []
    for start in range(0, MAX_CP, BLOCK):
        block = tuple(props[start:start + BLOCK])
        if block not in blocks:
            blocks[block] = len(blocks)
            stage2.extend(block)
        stage1.append(blocks[block])

    def emit(name, ctype, values, per_line=16):
        lines = [f"constexpr {ctype} {name}[{len(values)}] = {{"]
        for i in range(0, len(values), per_line):
            lines.append("    " + ", ".join(str(v) for v in values[i:i + per_line]) + ",")
        lines.append("};")
        return "\n".join(lines)

    with open(out, "w", encoding="utf-8") as f:
        f.write(f"// Generated by tools/gen_unicode.py from the Unicode {VERSION} Character Database.\n")
        f.write("// Do not edit: it is part of the fingerprint format.\n")
        f.write(f"// {len(record_list)} records, {len(blocks)} blocks of {BLOCK}, "
                f"{len(pool)} mapped code points, longest mapping {max_len}.\n\n")
        f.write(f"constexpr unsigned kBlockShift = {BLOCK.bit_length() - 1};\n")
        f.write(f"constexpr unsigned kMaxMapLen = {max_len};\n")
        f.write(emit("kStage1", "std::uint16_t", stage1, 24) + "\n\n")
        f.write(emit("kStage2", "std::uint16_t", stage2, 24) + "\n\n")
        f.write("constexpr Record kRecords[] = {\n")
        for c, cc, off, n in record_list:
            f.write(f"    {{{c}, {cc}, {n}, {off}}},\n")
        f.write("};\n\n")
        f.write(emit("kPool", "char32_t", [hex(x) for x in pool], 12) + "\n")
    print(f"{len(record_list)} records, {len(blocks)} blocks, pool {len(pool)}, max map {max_len}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
