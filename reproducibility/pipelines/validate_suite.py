#!/usr/bin/python3
"""Validate the pipeline test suite (SPEC §11) against the registry catalog.

Usage: /usr/bin/python3 reproducibility/pipelines/validate_suite.py [--suite FILE] [--root REPO]

Checks every pipeline request the way the gate must (types, arity, required
params, bounds, ints, ids, cycles, dead steps, SIZE_BY_VOL output, column
readers on "data", columns present in the data header, grid size), checks
that each family rewrite expands to exactly its family's expression at every
grid point in the same order, and checks the suite-level quotas. Prints a
summary; exits 1 on any violation. Standard library only.
"""

import argparse
import collections
import gzip
import itertools
import json
import math
import os
import re
import sys

ID_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
MAX_GRID = 12
# Capabilities that read named columns, so they need the data frame itself.
# Any capability with a "column" param is added to this set at load time.
COLUMN_READERS = {"col", "spread", "col_ratio", "CARRY_RAW", "CARRY_Z", "CARRY_SIGN",
                  "CARRY_ANN", "FRONT_RET", "SPREAD_Z", "const"}
REQUEST_KEYS = {"pipeline", "output", "metric", "data"}
STEP_KEYS = {"id", "capability", "params", "inputs"}
ENTRY_KEYS = {"name", "kind", "prompt", "terms", "request", "family_request"}
FAMILY_REQUEST_KEYS = {"family", "metric", "params", "data"}
KINDS = ("family_rewrite", "composed")
CARRY_FILES = {"eia-nymex-futures/crude-oil-wti-cushing.csv", "eia-nymex-futures/heating-oil-nyh.csv"}
# Suite-level quotas from the issue.
MIN_TOTAL, MIN_REWRITES, MIN_COMPOSED, MIN_WIDE = 50, 16, 24, 3


def load_catalog(root):
    cat = os.path.join(root, "registry", "catalog")
    entries = []
    for fn in sorted(os.listdir(cat)):
        if fn.endswith(".json"):
            with open(os.path.join(cat, fn), encoding="utf-8") as f:
                entries.extend(json.load(f))
    by_kind = collections.defaultdict(dict)
    for e in entries:
        by_kind[e["kind"]][e["name"]] = e
    steps = dict(by_kind["operation"])
    steps.update(by_kind["signal"])
    return steps, by_kind["family"], by_kind["metric"]


def header(root, rel, cache):
    if rel in cache:
        return cache[rel]
    base = os.path.realpath(os.path.join(root, "sampledata", "data"))
    path = os.path.realpath(os.path.join(base, rel))
    cols = None
    if path.startswith(base + os.sep) and os.path.isfile(path):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8", newline="") as f:
            line = f.readline().rstrip("\r\n")
        sep = ";" if line.count(";") > line.count(",") else ","
        cols = [c.strip() for c in line.split(sep)][1:]  # first column is the date
    cache[rel] = cols
    return cols


# ---- S-expressions (impl.expr) ----

def parse_sexpr(text):
    toks = text.replace("(", " ( ").replace(")", " ) ").split()
    pos = 0

    def atom(t):
        try:
            return float(t)
        except ValueError:
            return t

    def walk():
        nonlocal pos
        t = toks[pos]
        pos += 1
        if t == "(":
            out = []
            while toks[pos] != ")":
                out.append(walk())
            pos += 1
            return out
        return atom(t)

    tree = walk()
    if pos != len(toks):
        raise ValueError("trailing tokens in %r" % text)
    return tree


def subst(tree, env):
    if isinstance(tree, list):
        return [subst(t, env) for t in tree]
    if isinstance(tree, str) and tree in env:
        return env[tree]
    return tree


def norm(v):
    """Grid values enter expressions as atoms: numbers as floats."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


# ---- params ----

def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check_value(where, spec, v, cols, errs):
    t = spec.get("type")
    if t == "int":
        if not (isinstance(v, int) and not isinstance(v, bool)):
            errs.append("%s: %s must be an integer, got %r" % (where, spec["name"], v))
            return
    elif t == "float":
        if not is_num(v):
            errs.append("%s: %s must be a number, got %r" % (where, spec["name"], v))
            return
    elif t == "column":
        if not isinstance(v, str):
            errs.append("%s: %s must be a column name, got %r" % (where, spec["name"], v))
            return
        if cols is not None and v not in cols:
            errs.append("%s: column %r (param %s) is not in the data header %s" % (where, v, spec["name"], cols))
        return
    else:
        errs.append("%s: param %s has unknown type %r in the catalog" % (where, spec["name"], t))
        return
    if "min" in spec and v < spec["min"]:
        errs.append("%s: %s=%r below min %r" % (where, spec["name"], v, spec["min"]))
    if "max" in spec and v > spec["max"]:
        errs.append("%s: %s=%r above max %r" % (where, spec["name"], v, spec["max"]))


def check_params(where, specs, given, cols, errs):
    """Validates a params object; returns the grid axes [(name, [values])] in schema order."""
    axes = []
    if given is None:
        given = {}
    if not isinstance(given, dict):
        errs.append("%s: params must be an object" % where)
        return axes
    declared = {s["name"]: s for s in specs}
    for k in sorted(set(given) - set(declared)):
        errs.append("%s: unknown param %r" % (where, k))
    for spec in specs:
        name = spec["name"]
        if name in given:
            raw = given[name]
            if isinstance(raw, list):
                if not raw:
                    errs.append("%s: %s is an empty list" % (where, name))
                    continue
                vals = raw
            else:
                vals = [raw]
            for v in vals:
                if isinstance(v, (list, dict)) or v is None or isinstance(v, bool):
                    errs.append("%s: %s value %r is not a number or string" % (where, name, v))
                else:
                    check_value(where, spec, v, cols, errs)
            axes.append((name, vals))
        elif "default" in spec:
            if spec.get("type") == "column":  # a defaulted column must exist too
                check_value(where + " (default)", spec, spec["default"], cols, errs)
            axes.append((name, [spec["default"]]))
        else:
            errs.append("%s: required param %s missing" % (where, name))
            axes.append((name, []))
    return axes


def grid_points(axes):
    """Cartesian product, first axis slowest, each axis in listed order."""
    names = [a[0] for a in axes]
    return [dict(zip(names, combo)) for combo in itertools.product(*[a[1] for a in axes])]


# ---- pipeline checks ----

def out_type(cap):
    outs = cap["alg"].get("outputs", [])
    if outs == ["frame"]:
        return "frame"
    if outs == ["series"]:
        return "series"
    if outs and outs[0] == "pnl":
        return "pnl"
    return "+".join(outs) or "none"


def accepts(declared, actual):
    if declared == "series":
        return actual in ("series", "frame")
    if declared == "frame":
        return actual == "frame"
    return False


def check_request(where, req, caps, metrics, root, hcache, errs):
    """Returns (layers {id: layer}, steps by id, axes [(step, param, values)]) or None."""
    if not isinstance(req, dict):
        errs.append("%s: request must be an object" % where)
        return None
    for k in sorted(set(req) - REQUEST_KEYS):
        errs.append("%s: unknown request key %r" % (where, k))
    for k in sorted(REQUEST_KEYS - set(req)):
        errs.append("%s: missing request key %r" % (where, k))
    if req.get("metric") not in metrics:
        errs.append("%s: metric %r is not a catalog metric" % (where, req.get("metric")))
    cols = header(root, req.get("data", ""), hcache) if isinstance(req.get("data"), str) else None
    if cols is None:
        errs.append("%s: data %r is not a file under sampledata/data" % (where, req.get("data")))
    pipe = req.get("pipeline")
    if not isinstance(pipe, list) or not pipe:
        errs.append("%s: pipeline must be a non-empty list" % where)
        return None

    steps, types, axes = {}, {}, []
    for i, s in enumerate(pipe):
        sw = "%s step %d" % (where, i)
        if not isinstance(s, dict):
            errs.append("%s: not an object" % sw)
            continue
        for k in sorted(set(s) - STEP_KEYS):
            errs.append("%s: unknown key %r" % (sw, k))
        sid = s.get("id")
        if not isinstance(sid, str) or not ID_RE.match(sid) or sid == "data":
            errs.append("%s: bad step id %r" % (sw, sid))
            continue
        sw = "%s step %s" % (where, sid)
        if sid in steps:
            errs.append("%s: duplicate id" % sw)
            continue
        steps[sid] = s
        capname = s.get("capability")
        cap = caps.get(capname)
        if cap is None:
            errs.append("%s: capability %r is not an operation or signal" % (sw, capname))
            continue
        alg = cap["alg"]
        ins = alg.get("inputs", [])
        if any(t not in ("series", "frame") for t in ins):
            errs.append("%s: %s takes %s inputs and cannot be a step" % (sw, capname, ins))
        types[sid] = out_type(cap)
        if types[sid] not in ("series", "frame", "pnl"):
            errs.append("%s: %s outputs %s, which no step can consume" % (sw, capname, types[sid]))
        inputs = s.get("inputs")
        if not isinstance(inputs, list) or not all(isinstance(x, str) for x in inputs):
            errs.append("%s: inputs must be a list of ids" % sw)
            s["inputs"] = inputs = []
        if len(inputs) != alg.get("arity"):
            errs.append("%s: %d inputs, %s has arity %s" % (sw, len(inputs), capname, alg.get("arity")))
        reads_cols = capname in COLUMN_READERS or any(p.get("type") == "column" for p in alg.get("params", []))
        if reads_cols and inputs != ["data"] * len(inputs):
            errs.append("%s: %s reads columns by name and must take \"data\" directly" % (sw, capname))
        for name, vals in check_params(sw, alg.get("params", []), s.get("params"), cols, errs):
            axes.append((sid, name, vals))

    # Input references and types (needs every id known first).
    for sid, s in steps.items():
        cap = caps.get(s.get("capability"))
        if cap is None:
            continue
        for j, inp in enumerate(s["inputs"]):
            if inp == "data":
                t = "frame"
            elif inp in steps:
                t = types.get(inp)
            else:
                errs.append("%s step %s: input %r is not a step id or \"data\"" % (where, sid, inp))
                continue
            if inp == sid:
                errs.append("%s step %s: takes itself as input" % (where, sid))
            decl = cap["alg"]["inputs"][j] if j < len(cap["alg"]["inputs"]) else None
            if decl is not None and t is not None and not accepts(decl, t):
                errs.append("%s step %s: input %d (%s) is %s, %s declares %s" % (where, sid, j, inp, t, s["capability"], decl))

    # Layers; cycles.
    layers, state = {"data": 0}, {}

    def layer(sid, trail):
        if sid in layers:
            return layers[sid]
        if state.get(sid) == "visiting":
            raise ValueError(" -> ".join(trail + [sid]))
        state[sid] = "visiting"
        deps = [x for x in steps[sid]["inputs"] if x == "data" or x in steps]
        layers[sid] = 1 + max([layer(x, trail + [sid]) for x in deps] or [0])
        return layers[sid]

    try:
        for sid in steps:
            layer(sid, [])
    except ValueError as e:
        errs.append("%s: cycle %s" % (where, e))
        return None
    del layers["data"]

    out = req.get("output")
    if out not in steps:
        errs.append("%s: output %r is not a step" % (where, out))
        return None
    if steps[out].get("capability") != "SIZE_BY_VOL":
        errs.append("%s: output step %s is %s, must be SIZE_BY_VOL" % (where, out, steps[out].get("capability")))
    for sid, t in types.items():
        if t == "pnl" and sid != out:
            errs.append("%s step %s: a P&L can only be the output" % (where, sid))
    live, todo = set(), [out]
    while todo:
        sid = todo.pop()
        if sid in live or sid not in steps:
            continue
        live.add(sid)
        todo.extend(steps[sid]["inputs"])
    for sid in steps:
        if sid not in live:
            errs.append("%s step %s: dead step (does not feed the output)" % (where, sid))

    size = 1
    for _, _, vals in axes:
        size *= len(vals)
    if size > MAX_GRID:
        errs.append("%s: grid of %d points exceeds %d" % (where, size, MAX_GRID))
    return layers, steps, axes, size


def expand_pipeline(steps, out, caps, point):
    """The output's expression at one grid point, every step inlined."""
    memo = {}

    def expr(sid):
        if sid == "data":
            return "data"
        if sid not in memo:
            s = steps[sid]
            cap = caps[s["capability"]]
            env = {"$" + p["name"]: norm(point[(sid, p["name"])]) for p in cap["alg"].get("params", [])}
            for var, inp in zip(("x", "y"), s["inputs"]):
                env[var] = expr(inp)
            memo[sid] = subst(parse_sexpr(cap["impl"]["expr"]), env)
        return memo[sid]

    return expr(out)


def check_family_rewrite(where, entry, pipe_info, caps, families, metrics, root, hcache, errs):
    fr = entry.get("family_request")
    req = entry["request"]
    if not isinstance(fr, dict):
        errs.append("%s: family_rewrite needs a family_request object" % where)
        return
    for k in sorted(set(fr) ^ FAMILY_REQUEST_KEYS):
        errs.append("%s: family_request key %r missing or unknown" % (where, k))
    fam = families.get(fr.get("family"))
    if fam is None:
        errs.append("%s: family %r is not in the catalog" % (where, fr.get("family")))
        return
    if fr.get("metric") != req.get("metric") or fr.get("data") != req.get("data"):
        errs.append("%s: family_request metric/data differ from the pipeline's" % where)
    cols = header(root, fr.get("data", ""), hcache)
    ferrs = []
    faxes = check_params(where + " family_request", fam["alg"].get("params", []), fr.get("params"), cols, ferrs)
    if ferrs:
        errs.extend(ferrs)
        return
    layers, steps, axes, _ = pipe_info
    ppoints = [{(a[0], a[1]): v for a, v in zip(axes, combo)}
               for combo in itertools.product(*[a[2] for a in axes])]
    fpoints = grid_points(faxes)
    if len(ppoints) != len(fpoints):
        errs.append("%s: pipeline grid has %d points, family grid %d" % (where, len(ppoints), len(fpoints)))
        return
    fexpr = parse_sexpr(fam["impl"]["expr"])
    for i, (pp, fp) in enumerate(zip(ppoints, fpoints)):
        got = expand_pipeline(steps, req["output"], caps, pp)
        env = {"$" + k: norm(v) for k, v in fp.items()}
        env["x"] = "data"
        want = subst(fexpr, env)
        if got != want:
            errs.append("%s: grid point %d differs from %s\n    pipeline: %s\n    family:   %s"
                        % (where, i, fam["name"], sexpr_str(got), sexpr_str(want)))
            return


def sexpr_str(t):
    if isinstance(t, list):
        return "(" + " ".join(sexpr_str(x) for x in t) + ")"
    if isinstance(t, float) and t.is_integer():
        return str(int(t))
    return str(t)


def wide_width(layers, steps):
    """Most steps of one layer that all feed a single add step (independent branches)."""
    best = 0
    for sid, s in steps.items():
        if s.get("capability") != "add":
            continue
        anc, todo = set(), list(s["inputs"])
        while todo:
            x = todo.pop()
            if x == "data" or x in anc:
                continue
            anc.add(x)
            todo.extend(steps[x]["inputs"])
        per = collections.Counter(layers[x] for x in anc)
        best = max([best] + list(per.values()))
    return best


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default=os.path.join(here, "suite.json"))
    ap.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")))
    args = ap.parse_args()

    caps, families, metrics = load_catalog(args.root)
    COLUMN_READERS.update(n for n, c in caps.items()
                          if any(p.get("type") == "column" for p in c["alg"].get("params", [])))
    with open(args.suite, encoding="utf-8") as f:
        suite = json.load(f)
    errs, hcache = [], {}
    if not isinstance(suite, dict) or set(suite) != {"pipelines"} or not isinstance(suite["pipelines"], list):
        print("suite: must be {\"pipelines\": [...]}")
        return 1

    kinds = collections.Counter()
    fam_counts, fam_files = collections.Counter(), collections.defaultdict(set)
    names, metrics_used, files_used, caps_used = set(), collections.Counter(), collections.Counter(), set()
    max_width = (0, None)
    max_depth = (0, None)
    wide, grid_sizes = [], collections.Counter()
    for i, e in enumerate(suite["pipelines"]):
        where = "pipelines[%d]" % i
        if not isinstance(e, dict):
            errs.append("%s: not an object" % where)
            continue
        name = e.get("name")
        where = "%s %s" % (where, name)
        if not isinstance(name, str) or not name or name in names:
            errs.append("%s: missing or duplicate name" % where)
        names.add(name)
        for k in sorted(set(e) - ENTRY_KEYS):
            errs.append("%s: unknown key %r" % (where, k))
        kind = e.get("kind")
        if kind not in KINDS:
            errs.append("%s: kind %r not one of %s" % (where, kind, KINDS))
            continue
        kinds[kind] += 1
        if not isinstance(e.get("prompt"), str) or len(e["prompt"].split()) < 5:
            errs.append("%s: prompt must be a researcher's sentence" % where)
        if (kind == "family_rewrite") != ("family_request" in e):
            errs.append("%s: family_request present iff kind is family_rewrite" % where)
        fr = e.get("family_request")
        if isinstance(fr, dict) and fr.get("family") == "CARRY" and fr.get("data") not in CARRY_FILES:
            errs.append("%s: CARRY rewrite on %r (only the eia-nymex-futures files)" % (where, fr.get("data")))
        before = len(errs)
        info = check_request(where, e.get("request"), caps, metrics, args.root, hcache, errs)
        if info is None or len(errs) > before:
            continue  # later checks assume a well-formed graph
        layers, steps, axes, size = info
        req = e["request"]
        want_terms = {s.get("capability") for s in steps.values()} | {req.get("metric")}
        terms = e.get("terms")
        if not isinstance(terms, list) or set(terms) != want_terms or len(terms) != len(set(terms)):
            errs.append("%s: terms %r should list each step capability and the metric once: %s"
                        % (where, terms, sorted(want_terms, key=str)))
        grid_sizes[size] += 1
        metrics_used[req.get("metric")] += 1
        files_used[req.get("data")] += 1
        caps_used |= {s["capability"] for s in steps.values()}
        width = max(collections.Counter(layers.values()).values())
        if width > max_width[0]:
            max_width = (width, name)
        depth = max(layers.values())
        if depth > max_depth[0]:
            max_depth = (depth, name)
        if kind == "family_rewrite":
            check_family_rewrite(where, e, info, caps, families, metrics, args.root, hcache, errs)
            if len(errs) == before and isinstance(e.get("family_request"), dict):
                fam_counts[e["family_request"]["family"]] += 1
                fam_files[e["family_request"]["family"]].add(req.get("data"))
        elif wide_width(layers, steps) >= 4:
            wide.append(name)

    # Suite-level quotas.
    total = sum(kinds.values())
    if total < MIN_TOTAL:
        errs.append("suite: %d pipelines, need >= %d" % (total, MIN_TOTAL))
    if kinds["family_rewrite"] < MIN_REWRITES:
        errs.append("suite: %d family rewrites, need >= %d" % (kinds["family_rewrite"], MIN_REWRITES))
    if kinds["composed"] < MIN_COMPOSED:
        errs.append("suite: %d composed, need >= %d" % (kinds["composed"], MIN_COMPOSED))
    for fam in families:
        if fam_counts[fam] < 2 or len(fam_files[fam]) < 2:
            errs.append("suite: family %s needs rewrites on several data files (%d on %d)"
                        % (fam, fam_counts[fam], len(fam_files[fam])))
    if len(wide) < MIN_WIDE:
        errs.append("suite: %d wide composed pipelines (>= 4 branches of one layer into an add), need >= %d"
                    % (len(wide), MIN_WIDE))

    print("pipelines: %d (family_rewrite %d, composed %d)" % (total, kinds["family_rewrite"], kinds["composed"]))
    print("family rewrites: " + ", ".join("%s %d on %d files" % (f, fam_counts[f], len(fam_files[f])) for f in sorted(families)))
    print("wide composed (>= 4 branches in one layer feeding an add): %d: %s" % (len(wide), ", ".join(wide)))
    print("max layer width: %d (%s)" % max_width)
    print("max depth (output layer): %d (%s)" % max_depth)
    print("grid sizes: " + ", ".join("%d pts x%d" % kv for kv in sorted(grid_sizes.items())))
    print("metrics: " + ", ".join("%s %d" % kv for kv in sorted(metrics_used.items())))
    print("data files: %d: %s" % (len(files_used), ", ".join("%s %d" % kv for kv in sorted(files_used.items()))))
    print("distinct step capabilities: %d" % len(caps_used))
    if errs:
        print("\n%d violation(s):" % len(errs))
        for x in errs:
            print("  " + x)
        return 1
    print("OK: no violations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
