#!/usr/bin/env bash
# The HTML report as a person sees it: headless Chromium draws it; the charts must be there
# (elements in the rendered DOM) and the screenshot must not be blank.
set -u
bin="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
chrome=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chrome" ]; then
  echo "report: chromium is not installed (scripts/setup installs it)"
  echo "report: 0 passed, 1 failed"
  exit 1
fi
"$bin" null -n 200000 -c 1,2 --repeat 3 --results-dir a -q >/dev/null 2>&1
"$bin" null -n 200000 -c 1,2 --repeat 3 --results-dir b -q >/dev/null 2>&1
"$bin" report a/*.json b/*.json --html report.html --svg charts 2>/dev/null
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
  --disable-component-update --disable-sync --user-data-dir="$work/profile" --window-size=1100,1400)
timeout 90 "$chrome" "${flags[@]}" --dump-dom "file://$work/report.html" >dom.html 2>/dev/null
timeout 90 "$chrome" "${flags[@]}" --screenshot="$work/shot.png" "file://$work/report.html" >/dev/null 2>&1
pass=0 fail=0
expect() {  # NAME CONDITION...
  local name="$1"
  shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $name"; fi
}
bars=$(grep -o 'class="bar"' dom.html | wc -l)
curves=$(grep -o 'class="curve"' dom.html | wc -l)
whiskers=$(grep -o 'class="whisker"' dom.html | wc -l)
expect "4 bars drawn (2 jobs x 2 files), got $bars" test "$bars" -eq 4
expect "4 latency curves drawn, got $curves" test "$curves" -eq 4
expect "whiskers for the repeats, got $whiskers" test "$whiskers" -eq 4
expect "charts written alone" test -s charts/rps-01.svg -a -s charts/latency-01.svg
size=$(stat -c %s shot.png 2>/dev/null || echo 0)
expect "screenshot written ($size bytes)" test "$size" -gt 20000
# Not blank: the PNG's pixels are not all one colour (python3's zlib reads them).
expect "screenshot is not blank" python3 - shot.png <<'PY'
import sys, zlib, struct
data = open(sys.argv[1], 'rb').read()
pos, idat, w = 8, b'', 0
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    if kind == b'IHDR': w, h, depth, ctype = struct.unpack('>IIBB', data[pos + 8:pos + 18])
    if kind == b'IDAT': idat += data[pos + 8:pos + 8 + n]
    pos += 12 + n
raw = zlib.decompress(idat)
colours = len(set(raw[i:i + 3] for i in range(1, len(raw), 3)))
sys.exit(0 if colours > 50 else 1)
PY
echo "report: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
