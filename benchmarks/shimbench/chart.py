"""The PNG chart, drawn by gnuplot (Debian's gnuplot-nox, installed on first use).

Left: ours/Go ratio of every metric that has a target, log scale, bar green where the
target is met, red where missed, a black mark at the target. Right: latency medians with
p25-p75 bars for both shims (and runc alone for `ctr run --rm`), log scale."""
import os
import shutil
import subprocess
import tempfile

from .stats import percentile

GREEN, RED = 0x2CA02C, 0xD62728


def ensure_gnuplot():
    if shutil.which("gnuplot"):
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "gnuplot-nox"]
    if subprocess.run(install, env=env, stdout=subprocess.DEVNULL).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, stdout=subprocess.DEVNULL, check=True)
        subprocess.run(install, env=env, stdout=subprocess.DEVNULL, check=True)


def _terminal():
    terminals = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True,
                               text=True).stderr + ""
    if "pngcairo" in terminals:
        return 'pngcairo size 1500,600 font "DejaVu Sans,10"'
    return "png size 1500,600"


def _ratio_data(rows):
    lines = []
    for row in rows:
        if row.chart_label and row.ratio is not None and row.target_ratio is not None:
            color = GREEN if row.met else RED
            lines.append(f'"{row.chart_label}" {row.ratio:.4f} {row.target_ratio:.4f} {color}')
    return "\n".join(lines) + "\n"


def _triple(values):
    if not values:
        return "NaN NaN NaN"
    return " ".join(f"{percentile(values, p):.4f}" for p in (50, 25, 75))


def _latency_data(r):
    groups = [
        ("ctr run --rm", r["run"]["wall_ms"]["ours"], r["run"]["wall_ms"]["go"],
         r["run"]["wall_ms"]["runc"]),
        ("exec", r["exec"]["wall_ms"]["ours"], r["exec"]["wall_ms"]["go"],
         r["exec"]["wall_ms"]["runc"]),
        ("exit notify", r["exit"]["ours"]["total"], r["exit"]["go"]["total"], []),
        ("shim start", r["start"]["ours"]["first_reply_ms"], r["start"]["go"]["first_reply_ms"], []),
    ]
    return "".join(f'"{name}" {_triple(a)} {_triple(b)} {_triple(c)}\n' for name, a, b, c in groups)


SCRIPT = """
set terminal {terminal}
set output '{png}'
set termoption noenhanced
set multiplot layout 1,2 title "{title}"
set title "ours / Go (log scale): black bar = target; green = met, red = missed"
set logscale y 2
set yrange [0.03:8]
set grid ytics
set style fill solid 0.8 border -1
set boxwidth 0.6
set xtics rotate by -25 nomirror
set rmargin 6
set key off
plot '{ratios}' using 0:2:4:xtic(1) with boxes lc rgb variable, \\
     '' using 0:3:(0.35) with xerrorbars pt 0 lw 3 lc rgb "black", \\
     1 with lines dt 2 lc rgb "gray40"
set title "latency, ms (median; bars p25-p75; log scale)"
set logscale y 10
set yrange [0.3:500]
set key top right
set style data histogram
set style histogram errorbars gap 2 lw 1
set xtics rotate by 0
set rmargin 2
plot '{latency}' using 2:3:4:xtic(1) title "shim-runc" lc rgb "#1f77b4", \\
     '' using 5:6:7 title "Go shim" lc rgb "#ff7f0e", \\
     '' using 8:9:10 title "runc alone (run / exec)" lc rgb "#7f7f7f"
unset multiplot
"""


def draw(results, rows, png):
    """Writes `png`; False (and a note on stderr) if gnuplot is unavailable or fails."""
    if not shutil.which("gnuplot"):
        print("chart: gnuplot missing, no chart", flush=True)
        return False
    with tempfile.TemporaryDirectory() as tmp:
        ratios, latency = os.path.join(tmp, "ratios.dat"), os.path.join(tmp, "latency.dat")
        with open(ratios, "w") as f:
            f.write(_ratio_data(rows))
        with open(latency, "w") as f:
            f.write(_latency_data(results))
        m = results["machine"]
        title = (f"shim-runc vs Go runc shim, {m['date']}, {m['cores']} cores, "
                 f"{m['containerd'].split()[-1]}")
        script = SCRIPT.format(terminal=_terminal(), png=png, title=title, ratios=ratios,
                               latency=latency)
        done = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"chart: gnuplot failed: {done.stderr.strip()}", flush=True)
            return False
    return True
