#!/usr/bin/env bash
# Real float series that the codec was never tuned on, taken from Debian packages' data files, for
# `./dev compare-real-data --unseen`. Downloads the packages with `apt-get download` (no install)
# into DIR (default build/unseen-data), unpacks them there and writes one .csv per series (one
# value a line, as the source prints it), then prints the .csv paths. Reruns reuse the downloads.
#
#   eop_x, eop_y, eop_ut1_utc, eop_lod  IERS EOP 14 C04 Earth orientation, daily 1962-2022
#                                       (python3-astropy), 6-7 decimals, ~22k values each
#   membrane_f32                        a membrane potential recording, float32 ADC samples
#                                       (python-matplotlib-data), printed as shortest float32 text
#   co2_weekly                          Mauna Loa CO2, weekly 1958-2001 (python3-statsmodels),
#                                       1 decimal, missing weeks left out
set -euo pipefail

DIR="${1:-build/unseen-data}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
cd "$DIR"

PACKAGES=(python3-astropy python-matplotlib-data python3-statsmodels)
for p in "${PACKAGES[@]}"; do
  if ! compgen -G "${p}_*.deb" >/dev/null; then
    apt-get download "$p" >&2
  fi
  if [[ ! -d x_$p ]]; then
    dpkg-deb -x "$(compgen -G "${p}_*.deb" | head -1)" "x_$p.tmp"
    mv "x_$p.tmp" "x_$p"
  fi
done

python3 - "$DIR" <<'EOF'
import glob, os, struct, sys

out = sys.argv[1]

def one(pattern):
    paths = glob.glob(os.path.join(out, pattern), recursive=True)
    if len(paths) != 1:
        sys.exit("fetch_unseen_data.sh: expected one file for %s, found %d" % (pattern, len(paths)))
    return paths[0]

def write(name, values):
    path = os.path.join(out, name + ".csv")
    with open(path, "w") as f:
        f.write("\n".join(values) + "\n")
    print(path)

# EOP C04: "year month day MJD x y UT1-UTC LOD dX dY ..." after a text header.
cols = {"eop_x": 4, "eop_y": 5, "eop_ut1_utc": 6, "eop_lod": 7}
series = {name: [] for name in cols}
for line in open(one("x_python3-astropy/**/iers/data/eopc04_IAU2000.62-now")):
    fields = line.split()
    if len(fields) >= 8 and fields[0].isdigit() and len(fields[0]) == 4:
        for name, col in cols.items():
            series[name].append(fields[col])
for name in cols:
    write(name, series[name])

# membrane.dat: little-endian float32 samples; a sensor prints the shortest text that reads back
# as the same float32.
raw = open(one("x_python-matplotlib-data/**/sample_data/membrane.dat"), "rb").read()
values = []
for (v,) in struct.iter_unpack("<f", raw):
    for digits in range(1, 10):
        text = "%.*g" % (digits, v)
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == v:
            break
    values.append(text)
write("membrane_f32", values)

# co2.csv: "date,co2", empty where a week is missing.
values = []
for line in list(open(one("x_python3-statsmodels/**/datasets/co2/co2.csv")))[1:]:
    value = line.strip().split(",")[1]
    if value:
        values.append(value)
write("co2_weekly", values)
EOF
