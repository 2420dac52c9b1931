#!/usr/bin/env bash
# Checks that every relative link in README.md and docs/ resolves: the file exists and, for
# FILE#anchor (or #anchor), that FILE has a heading with that GitHub anchor. Prints each
# broken link as FILE:LINE: LINK and exits 1 when there is one.
# Usage: scripts/check-doc-links.sh [FILE.md...]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
    mapfile -t docs < <(find docs -name '*.md' | sort)
    set -- README.md "${docs[@]}"
fi
python3 - "$@" <<'PY'
import os, re, sys
def anchors(path):
    out, seen = set(), {}
    fence = False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        if fence or not line.startswith("#"):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out
bad = links = 0
for f in sys.argv[1:]:
    fence = False
    for no, line in enumerate(open(f, encoding="utf-8"), 1):
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        for link in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"[a-z]+:", link):
                continue
            links += 1
            path, _, anchor = link.partition("#")
            target = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            if not os.path.exists(target):
                print(f"{f}:{no}: {link}: no such file")
                bad += 1
            elif anchor and target.endswith(".md") and anchor not in anchors(target):
                print(f"{f}:{no}: {link}: no heading with that anchor")
                bad += 1
print(f"{links - bad} of {links} links in {len(sys.argv) - 1} files resolve")
sys.exit(1 if bad else 0)
PY
