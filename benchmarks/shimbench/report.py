"""Turns the raw samples into the results table (medians, spread, ratio ours/Go, targets),
results.json, results.md, the chart, and the results section of docs/performance.md."""
import datetime
import json
import os
import platform
import re
import struct
import subprocess

from . import chart
from .stats import percentile, ratio, summary

DOCS_BEGIN = "<!-- results:begin (written by benchmarks/compare_shims.py) -->"
DOCS_END = "<!-- results:end -->"


class Row:
    def __init__(self, metric, ours, go, ratio_value=None, target=None, met=None, chart_label=None,
                 target_ratio=None):
        self.metric, self.ours, self.go = metric, ours, go
        self.ratio, self.target, self.met, self.chart_label = ratio_value, target, met, chart_label
        # The target as an ours/Go ratio, for the chart ("≤ 0.90" -> 0.9).
        if target_ratio is None and target and target[:2] in ("≤ ", "≥ "):
            target_ratio = float(target[2:])
        self.target_ratio = target_ratio

    def markdown(self):
        ratio_text = "" if self.ratio is None else f"{self.ratio:.2f}"
        verdict = {True: "met", False: "**missed**", None: ""}[self.met]
        target = f"{self.target} {verdict}".strip() if self.target else ""
        return f"| {self.metric} | {self.ours} | {self.go} | {ratio_text} | {target} |"


def _spread(values, digits=1):
    s = summary(values)
    return f"{s['p50']:.{digits}f} ({s['p25']:.{digits}f}–{s['p75']:.{digits}f})"


def _at_most(value, limit):
    return value <= limit


def latency_rows(r):
    rows = []
    run, floor = r["run"]["wall_ms"], r["run"]["wall_ms"]["runc"]
    ours_run, go_run = percentile(run["ours"], 50), percentile(run["go"], 50)
    q = ratio(ours_run, go_run)
    rows.append(Row("`ctr run --rm` /bin/true, ms p50 (p25–p75)", _spread(run["ours"]),
                    _spread(run["go"]), q, "≤ 0.90", _at_most(q, 0.9), "ctr run p50 ≤0.9"))
    q90 = ratio(percentile(run["ours"], 90), percentile(run["go"], 90))
    rows.append(Row("`ctr run --rm` /bin/true, ms p90", f"{percentile(run['ours'], 90):.1f}",
                    f"{percentile(run['go'], 90):.1f}", q90))
    rows.append(Row("`runc run` alone (floor: no containerd, no shim), ms p50 (p25–p75)",
                    _spread(floor), "same floor"))
    floor50 = percentile(floor, 50)
    share_ours, share_go = ours_run - floor50, go_run - floor50
    q = ratio(share_ours, share_go)
    rows.append(Row("shim's share of `ctr run --rm` (p50 − runc floor p50), ms",
                    f"{share_ours:.1f}", f"{share_go:.1f}", q, "≤ 0.50", _at_most(q, 0.5),
                    "run share ≤0.5"))
    split = run["runc_split"]
    rows.append(Row("`runc create`, `start`, wait, `delete` as separate calls (what a shim "
                    "runs), ms p50 (p25–p75)", _spread(split), "same floor"))
    split50 = percentile(split, 50)
    rows.append(Row("… `ctr run --rm` above those runc calls (ctr + containerd + shim), ms",
                    f"{ours_run - split50:.1f}", f"{go_run - split50:.1f}",
                    ratio(ours_run - split50, go_run - split50)))
    cpu = r["run"]["containerd_cpu_ms"]
    rows.append(Row("containerd CPU per `ctr run --rm` (own, children excluded), ms p50",
                    _spread(cpu["ours"]), _spread(cpu["go"]),
                    ratio(percentile(cpu["ours"], 50), percentile(cpu["go"], 50))))
    tear = r["run"]["teardown_ms"]
    rows.append(Row("shim processes gone after `ctr run --rm` returned, ms p50",
                    _spread(tear["ours"]), _spread(tear["go"]),
                    ratio(percentile(tear["ours"], 50), percentile(tear["go"], 50))))
    ex = r["exec"]["wall_ms"]
    q = ratio(percentile(ex["ours"], 50), percentile(ex["go"], 50))
    rows.append(Row("`ctr task exec` /bin/true, ms p50 (p25–p75)", _spread(ex["ours"]),
                    _spread(ex["go"]), q, "≤ 0.90", _at_most(q, 0.9), "exec p50 ≤0.9"))
    rows.append(Row("`ctr task exec` /bin/true, ms p90", f"{percentile(ex['ours'], 90):.1f}",
                    f"{percentile(ex['go'], 90):.1f}",
                    ratio(percentile(ex["ours"], 90), percentile(ex["go"], 90))))
    rows.append(Row("`runc exec` alone into the same container (floor), ms p50 (p25–p75)",
                    _spread(ex["runc"]), "same floor"))
    floor50 = percentile(ex["runc"], 50)
    share_ours = percentile(ex["ours"], 50) - floor50
    share_go = percentile(ex["go"], 50) - floor50
    rows.append(Row("… exec above the runc floor (ctr + containerd + shim), ms",
                    f"{share_ours:.1f}", f"{share_go:.1f}", ratio(share_ours, share_go)))
    rows.append(Row("`ctr version` (ctr start-up + one call: the client's part), ms p50 "
                    "(p25–p75)", _spread(ex["ctr_version"]), "same client"))
    cpu = r["exec"]["cpu_ms_per_exec"]
    for who in ("shim", "containerd"):
        rows.append(Row(f"{who} CPU per exec (own threads, children excluded), ms",
                        f"{cpu['ours'][who]:.2f}", f"{cpu['go'][who]:.2f}",
                        ratio(cpu["ours"][who], cpu["go"][who])))
    ex = r["exit"]
    q = ratio(percentile(ex["ours"]["total"], 50), percentile(ex["go"]["total"], 50))
    rows.append(Row("exit notification (container exit → subscriber), ms p50 (p25–p75)",
                    _spread(ex["ours"]["total"], 3), _spread(ex["go"]["total"], 3), q,
                    "≤ 1.00", _at_most(q, 1.0), "exit notify ≤1"))
    rows.append(Row("exit notification, ms p90", f"{percentile(ex['ours']['total'], 90):.3f}",
                    f"{percentile(ex['go']['total'], 90):.3f}",
                    ratio(percentile(ex["ours"]["total"], 90), percentile(ex["go"]["total"], 90))))
    for leg, text in (("reap", "exit → shim reaped it (exited_at)"),
                      ("publish", "reaped → shim published (envelope time)"),
                      ("deliver", "published → subscriber got it")):
        rows.append(Row(f"… {text}, ms p50", _spread(ex["ours"][leg], 3),
                        _spread(ex["go"][leg], 3),
                        ratio(percentile(ex["ours"][leg], 50), percentile(ex["go"][leg], 50))))
    st = r["start"]
    for key, text in (("address_ms", "shim start: `start` invoked → address printed"),
                      ("first_reply_ms", "shim start: `start` invoked → first call answered")):
        rows.append(Row(f"{text}, ms p50 (p25–p75)", _spread(st["ours"][key]),
                        _spread(st["go"][key]),
                        ratio(percentile(st["ours"][key], 50), percentile(st["go"][key], 50))))
    return rows


def _mib(kib):
    return f"{kib / 1024:.2f}"


def resource_rows(r):
    rows = []
    one, many = r["memory_one"], r["memory_many"]
    rows.append(Row("RSS, 1 container, MiB", _mib(one["ours"]["rss_kib"]),
                    _mib(one["go"]["rss_kib"]), ratio(one["ours"]["rss_kib"], one["go"]["rss_kib"])))
    q = ratio(one["ours"]["pss_kib"], one["go"]["pss_kib"])
    rows.append(Row("PSS, 1 container, MiB", _mib(one["ours"]["pss_kib"]),
                    _mib(one["go"]["pss_kib"]), q, "≤ 0.125", _at_most(q, 0.125)))
    after = r["memory_one_after_exec"]
    rows.append(Row(f"PSS after {len(r['exec']['wall_ms']['ours'])} execs, MiB", _mib(after["ours"]["pss_kib"]),
                    _mib(after["go"]["pss_kib"]),
                    ratio(after["ours"]["pss_kib"], after["go"]["pss_kib"])))
    n = many["ours"]["containers"]
    per_ours, per_go = many["ours"]["pss_total_kib"] / n, many["go"]["pss_total_kib"] / n
    q = ratio(per_ours, per_go)
    rows.append(Row(f"PSS per container with {n} running (sum of PSS / {n}), MiB", _mib(per_ours),
                    _mib(per_go), q, "≤ 0.125", _at_most(q, 0.125), "PSS/container ≤1/8"))
    rows.append(Row(f"PSS total, {n} containers, MiB", _mib(many["ours"]["pss_total_kib"]),
                    _mib(many["go"]["pss_total_kib"]), q))
    rows.append(Row(f"RSS total, {n} containers, MiB", _mib(many["ours"]["rss_total_kib"]),
                    _mib(many["go"]["rss_total_kib"]),
                    ratio(many["ours"]["rss_total_kib"], many["go"]["rss_total_kib"])))
    cpu_ours, cpu_go = percentile(many["ours"]["cpu_ms"], 50), percentile(many["go"]["cpu_ms"], 50)
    rows.append(Row("shim CPU from start to one running idle container, ms p50 of "
                    f"{n} shims", _spread(many["ours"]["cpu_ms"]), _spread(many["go"]["cpu_ms"]),
                    ratio(cpu_ours, cpu_go)))
    t_ours = max(many["ours"]["threads"] + [one["ours"]["threads"], after["ours"]["threads"]])
    t_go = max(many["go"]["threads"] + [one["go"]["threads"], after["go"]["threads"]])
    rows.append(Row("threads per shim (max seen, idle)", str(t_ours), str(t_go),
                    ratio(t_ours, t_go), "ours ≤ 2", t_ours <= 2, "threads: ours ≤2", 2 / t_go))
    tp = r["throughput"]
    q = ratio(percentile(tp["ours"]["mib_per_s"], 50), percentile(tp["go"]["mib_per_s"], 50))
    rows.append(Row("stdout throughput, MiB/s p50 (p25–p75)", _spread(tp["ours"]["mib_per_s"], 0),
                    _spread(tp["go"]["mib_per_s"], 0), q, "≥ 2.00", q >= 2.0, "stdout MiB/s ≥2"))
    q = ratio(percentile(tp["ours"]["shim_cpu_s_per_gib"], 50),
              percentile(tp["go"]["shim_cpu_s_per_gib"], 50))
    rows.append(Row("shim CPU per GiB of stdout (process CPU clock), s p50 (p25–p75)",
                    _spread(tp["ours"]["shim_cpu_s_per_gib"], 2),
                    _spread(tp["go"]["shim_cpu_s_per_gib"], 2), q, "≤ 0.50", _at_most(q, 0.5),
                    "shim CPU/GiB ≤0.5"))
    rows.append(Row("ctr CPU per GiB (same client both sides), s p50",
                    _spread(tp["ours"]["ctr_cpu_s_per_gib"], 2),
                    _spread(tp["go"]["ctr_cpu_s_per_gib"], 2)))
    b = r["binary"]
    for key, text in (("built_bytes", "binary size as built, MiB"),
                      ("stripped_bytes", "binary size stripped, MiB")):
        rows.append(Row(text, f"{b['ours'][key] / 2**20:.2f}", f"{b['go'][key] / 2**20:.2f}",
                        ratio(b["ours"][key], b["go"][key])))
    return rows


def table(rows):
    lines = ["| metric | shim-runc | Go shim | ours/Go | target |", "|---|---:|---:|---:|---|"]
    return "\n".join(lines + [row.markdown() for row in rows])


def phases_table(r, what):
    """Where `ctr run --rm` (what="run") or `ctr task exec` ("exec") spends its time, cut
    at the events it causes; with the runc call alone where one applies."""
    phases = r[what]["phases_ms"]
    calls = {"task create": "create", "task start": "start", "task delete": "delete"}
    title = {"run": "`ctr run --rm`", "exec": "`ctr task exec`"}[what]
    lines = [f"| {title} phase (between events), ms p50 | shim-runc | Go shim | ours − Go "
             "| the runc call alone |", "|---|---:|---:|---:|---:|"]
    for phase in phases["ours"]:
        ours, go = percentile(phases["ours"][phase], 50), percentile(phases["go"][phase], 50)
        call = next((c for prefix, c in calls.items() if phase.startswith(prefix)), None)
        alone = ""
        if what == "run" and call:
            alone = f"{percentile(r['run']['runc_calls_ms'][call], 50):.1f}"
        elif what == "exec" and phase.startswith("Start"):
            alone = f"{percentile(r['exec']['wall_ms']['runc'], 50):.1f} (whole `runc exec`)"
        lines.append(f"| {phase} | {ours:.1f} | {go:.1f} | {ours - go:+.1f} | {alone} |")
    return "\n".join(lines)


def _mapping_table(sample):
    lines = ["| mapping | size KiB | RSS KiB | PSS KiB | of which anonymous KiB |",
             "|---|---:|---:|---:|---:|"]
    for m in sample["top_mappings"]:
        lines.append(f"| `{m['mapping']}` | {m['size_kib']} | {m['rss_kib']} | {m['pss_kib']} | "
                     f"{m['anonymous_kib']} |")
    return "\n".join(lines)


def details(r):
    parts = []
    one, many = r["memory_one"], r["memory_many"]
    n = many["ours"]["containers"]
    for name, title in (("ours", "shim-runc"), ("go", "Go shim")):
        parts.append(f"#### {title}: largest mappings by PSS, 1 container\n\n"
                     + _mapping_table(one[name]))
        parts.append(f"#### {title}: largest mappings by PSS, one of {n} shims\n\n"
                     + _mapping_table(many[name]["one_of_them"]))
        parts.append(f"{title} threads (comm: count): "
                     + ", ".join(f"`{k}`: {v}" for k, v in sorted(one[name]["thread_names"].items()))
                     + f"; Pss_Anon {one[name]['pss_anon_kib']} KiB, "
                     f"Pss_File {one[name]['pss_file_kib']} KiB (1 container); with {n}: "
                     f"Pss_Anon {many[name]['pss_anon_total_kib']} KiB, "
                     f"Pss_File {many[name]['pss_file_total_kib']} KiB in all.")
    for name, text in r["micro"].items():
        parts.append(f"#### micro-benchmark `{name}`\n\n{text}")
    return "\n\n".join(parts)


def machine_info(repo, go_shim):
    def first_line(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "?"
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "kernel": platform.release(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kib / 2**20, 1),
        "cgroup": "v2" if os.path.exists("/sys/fs/cgroup/cgroup.controllers") else "v1",
        "containerd": first_line(["containerd", "--version"]),
        "runc": first_line(["runc", "--version"]),
        "go_shim": go_shim,
        "commit": _commit(repo),
        "load_start": load_average(),
    }


def _commit(repo):
    """HEAD's commit, read from .git directly (no git command: the tree is shared)."""
    git = os.path.join(repo, ".git")
    try:
        with open(os.path.join(git, "HEAD")) as f:
            head = f.read().strip()
        if not head.startswith("ref: "):
            return head[:12]
        ref = head[5:]
        if os.path.exists(os.path.join(git, ref)):
            with open(os.path.join(git, ref)) as f:
                return f.read().strip()[:12]
        with open(os.path.join(git, "packed-refs")) as f:
            for line in f:
                if line.rstrip().endswith(" " + ref):
                    return line.split()[0][:12]
    except OSError:
        pass
    return "?"


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def linkage(binary):
    """"static, non-PIE" / "dynamic, PIE" ... from the ELF header: e_type (ET_EXEC 2,
    ET_DYN 3) and whether a program header asks for an interpreter (PT_INTERP 3)."""
    with open(binary, "rb") as f:
        ident = f.read(64)
        if ident[:4] != b"\x7fELF" or ident[4] != 2:  # 64-bit ELF only
            return "?"
        e_type, = struct.unpack_from("<H", ident, 16)
        phoff, = struct.unpack_from("<Q", ident, 32)
        phentsize, phnum = struct.unpack_from("<HH", ident, 54)
        f.seek(phoff)
        headers = f.read(phentsize * phnum)
    interp = any(struct.unpack_from("<I", headers, i * phentsize)[0] == 3 for i in range(phnum))
    pie = "PIE" if e_type == 3 else "non-PIE"
    return f"{'dynamic' if interp else 'static'}, {pie}"


def shim_version(binary):
    done = subprocess.run([binary, "-v"], capture_output=True, text=True, timeout=10)
    return " ".join((done.stdout + done.stderr).split())[:160]


def ensure_gnuplot():
    chart.ensure_gnuplot()


def header(r):
    m = r["machine"]
    return (f"{m['date']}: {m['cores']} cores ({m['cpu']}), {m['memory_gib']} GiB, kernel "
            f"{m['kernel']}, cgroup {m['cgroup']}; {m['containerd']}; {m['runc']}; Go shim "
            f"`{m['go_shim']}` ({r['machine']['shim_versions']['go']}); shim-runc at commit "
            f"{m['commit']} (RelWithDebInfo, {m.get('shim_linkage', '?')}). Load average {m['load_start']} at the start, "
            f"{m['load_end']} at the end (the machine is shared). Rounds: "
            + ", ".join(f"{k} {v}" for k, v in r["profile"].items())
            + f"; {r['seconds']:.0f} s in all.")


def write(results, out):
    """Writes results.json, results.md and chart.png into `out`; returns the summary
    markdown (machine line and tables) for docs/performance.md, and whether the chart
    was drawn."""
    os.makedirs(out, exist_ok=True)
    rows = latency_rows(results) + resource_rows(results)
    summary_md = "\n\n".join([header(results), table(rows), phases_table(results, "run"),
                                phases_table(results, "exec")])
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    png = os.path.join(out, "chart.png")
    if os.path.exists(png):
        os.unlink(png)  # an earlier run's chart must not pass for this one's
    chart_done = chart.draw(results, rows, png)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("# shim-runc vs Go runc shim\n\n" + summary_md + "\n\n")
        if chart_done:
            f.write("![chart](chart.png)\n\n")
        f.write("Method: see docs/performance.md. Raw samples: results.json.\n\n")
        f.write("## Details\n\n" + details(results) + "\n")
    return summary_md, chart_done


def update_docs(path, summary_md, out, has_chart):
    with open(path) as f:
        text = f.read()
    if DOCS_BEGIN not in text or DOCS_END not in text:
        raise RuntimeError(f"{path}: results markers missing")
    docs_dir = os.path.dirname(path)
    rel = os.path.relpath(out, docs_dir)
    chart_md = f"![shim-runc vs Go shim]({rel}/chart.png)\n\n" if has_chart else ""
    block = (f"{DOCS_BEGIN}\n\nLatest run ([full results]({rel}/results.md), "
             f"[raw samples]({rel}/results.json)):\n\n{chart_md}{summary_md}\n\n{DOCS_END}")
    pattern = re.escape(DOCS_BEGIN) + ".*?" + re.escape(DOCS_END)
    text = re.sub(pattern, lambda _: block, text, flags=re.S)
    with open(path, "w") as f:
        f.write(text)
