#!/usr/bin/env python3
"""Independent pandas/numpy reference for groundgate's strategy kernel.

Written from DOMAIN.md (the strategy families and metrics), in vectorised
pandas style, to cross-check the Go implementation in execution/kernel. It is
deliberately not a port of the Go code: returns come from ffill/shift,
rolling windows from numpy's sliding_window_view over the valid values, the
portfolio from DataFrame.mean, turnover from DataFrame.diff.

Usage:
    reference.py DATA.csv GRID.json     one grid: GRID is a JSON list of configs
    reference.py --batch JOBS.json      JOBS is a list of {"data": PATH, "grid": [...]}
    reference.py --grid-bench METRIC DATA.csv GRID.json
                                        time one grid scored by one metric (the
                                        executor's benchmark): prints
                                        {"load_seconds", "grid_seconds",
                                        "load_cpu_seconds", "grid_cpu_seconds",
                                        "start", "scores": [...]}, timed with
                                        perf_counter and process_time around
                                        loading and around run + score (of
                                        that metric only)

A config is {"family": "MOM_WZS" | "MOM_REV" | "CARRY" | "VOL_TGT",
"window", "risk_window", "leverage", "target_vol", "lag", "front", "next"};
every key but family is optional, with DOMAIN.md's defaults. For each grid
it prints (one JSON value; a list of them with --batch):

    {"data": PATH, "dates": ["YYYY-MM-DD", ...], "start": ROW | null,
     "results": [{"assets": [...], "weights": [[...], ...], "pnl": [...],
                  "metrics": {"SRP": x, ...}}, ...]}

NaN is written as null. "start" is the common evaluation window's first row
(0-based): the first row on which every config's portfolio P&L is defined.

Conventions shared with the Go side, from DOMAIN.md and the kernel package
documentation: NA tokens are "", NA, NaN, N/A and "."; a window whose values
are all equal has mean = that value and std = 0 exactly; a zero sigma-hat
gives an NA weight; the MDD peak starts at the window's first row.
"""

import gzip
import json
import sys

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

NA_TOKENS = ["", "NA", "NaN", "N/A", "."]
SQRT252 = np.sqrt(252.0)
DEFAULTS = {"risk_window": 60, "leverage": 1.0, "target_vol": 0.10, "lag": 1,
            "front": "C1", "next": "C2"}


def load(path):
    """The CSV as a DataFrame of float64 columns on a 0..n-1 RangeIndex, plus
    the ISO date strings."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8-sig") as fh:
        header = fh.readline()
    sep = ";" if ";" in header and "," not in header else ","
    df = pd.read_csv(path, sep=sep, keep_default_na=False, na_values=NA_TOKENS,
                     skipinitialspace=True, dtype=str, encoding="utf-8-sig")
    raw_dates = df.iloc[:, 0].str.strip()
    iso = pd.to_datetime(raw_dates, format="%Y-%m-%d", errors="coerce")
    us = pd.to_datetime(raw_dates, format="%m/%d/%Y", errors="coerce")
    dates = iso.fillna(us)
    if dates.isna().any() or not dates.is_monotonic_increasing or dates.duplicated().any():
        raise SystemExit(f"{path}: bad or unsorted dates")
    # Python's float() rounds correctly, like Go's strconv.ParseFloat.
    values = df.iloc[:, 1:].apply(lambda c: c.str.strip().map(float, na_action="ignore"))
    values = values.astype("float64").reset_index(drop=True)
    return values, [d.strftime("%Y-%m-%d") for d in dates]


def dlog(x):
    """ln x_t - ln x_p, p the most recent earlier row with a valid x; NA if
    either value is <= 0."""
    prev = x.ffill().shift(1)
    return np.log(x.where(x > 0)) - np.log(prev.where(prev > 0))


def window_stats(x, w):
    """Mean and sample std (ddof=1) of the last w valid values of x strictly
    before each row (NA until w exist)."""
    valid = x.dropna()
    mean = pd.Series(np.nan, index=valid.index)
    std = pd.Series(np.nan, index=valid.index)
    if len(valid) >= w:
        win = sliding_window_view(valid.to_numpy(), w)  # row i: valid[i .. i+w-1]
        m = win.mean(axis=1)
        s = win.std(axis=1, ddof=1)
        flat = (win == win[:, :1]).all(axis=1)
        m[flat] = win[flat, 0]
        s[flat] = 0.0
        mean.iloc[w - 1:] = m
        std.iloc[w - 1:] = s
    # Inclusive stats at valid rows, carried over NA rows, then moved one row
    # down: row t sees the window that ended at the last valid row before t.
    before = lambda s: s.reindex(x.index).ffill().shift(1)
    return before(mean), before(std)


def wzs(x, w):
    m, s = window_stats(x, w)
    return (x - m) / s.where(s != 0)


def backtest(prices, signals, p):
    r = prices.apply(dlog)
    vol = r.apply(lambda c: window_stats(c, p["risk_window"])[1]) * SQRT252
    weights = (signals * p["target_vol"] / vol.where(vol != 0)).clip(-p["leverage"], p["leverage"])
    pnl = (weights.shift(p["lag"]) * r).mean(axis=1)
    return weights, pnl


def run(df, cfg):
    p = dict(DEFAULTS, **cfg)
    fam = p["family"]
    if fam in ("MOM_WZS", "MOM_REV"):
        sig = df.apply(lambda c: wzs(dlog(c).cumsum(), p["window"])).clip(-1, 1)
        if fam == "MOM_REV":
            sig = -sig
        prices = df
    elif fam == "CARRY":
        front, nxt = df[p["front"]], df[p["next"]]
        c = np.log(front.where(front > 0)) - np.log(nxt.where(nxt > 0))
        prices = df[[p["front"]]]
        sig = wzs(c, p["window"]).clip(-1, 1).to_frame(p["front"])
    elif fam == "VOL_TGT":
        prices = df
        sig = pd.DataFrame(1.0, index=df.index, columns=df.columns)
    else:
        raise SystemExit(f"unknown family {fam}")
    weights, pnl = backtest(prices, sig, p)
    return list(prices.columns), weights, pnl


METRICS = ["SRP", "MDD", "ARET", "AVOL", "SRT", "CLM", "HIT", "TRN", "TRET"]


def metrics(pnl, weights, start, names=METRICS):
    """The metrics named (all by default) over the evaluation window from
    row start; each is computed only when asked for, so that a benchmark
    scoring one metric does only that metric's work."""
    out = dict.fromkeys(names, np.nan)
    if start is None:
        return out
    win = pnl.iloc[start:]
    v = win.dropna()
    n = len(v)
    if n == 0:
        return out

    def moments():
        if (v == v.iloc[0]).all():
            return v.iloc[0], 0.0
        return v.mean(), v.std(ddof=1)

    def mdd():
        equity = np.exp(v.cumsum())
        return (1 - equity / equity.cummax()).max()

    def srp():
        mean, sd = moments()
        return mean / sd * SQRT252 if n >= 2 and sd != 0 else np.nan

    def srt():
        downside = np.sqrt((np.minimum(v, 0) ** 2).mean())
        return moments()[0] / downside * SQRT252 if downside > 0 else np.nan

    def clm():
        m = mdd()
        return moments()[0] * 252 / m if m > 0 else np.nan

    def hit():
        nonzero = (v != 0).sum()
        return (v > 0).sum() / nonzero if nonzero > 0 else np.nan

    def trn():
        w = weights.fillna(0)
        turnover = w.diff().abs().sum(axis=1)
        turnover.iloc[0] = w.iloc[0].abs().sum()
        return turnover.iloc[start:][win.notna()].mean()

    fns = {
        "SRP": srp,
        "MDD": mdd,
        "ARET": lambda: moments()[0] * 252,
        "AVOL": lambda: moments()[1] * SQRT252 if n >= 2 else np.nan,
        "SRT": srt,
        "CLM": clm,
        "HIT": hit,
        "TRN": trn,
        "TRET": v.sum,
    }
    out.update({k: fns[k]() for k in names})
    return out


def nulls(values):
    return [None if x != x else x for x in np.asarray(values, dtype="float64").tolist()]


def grid(path, configs):
    df, dates = load(path)
    runs = [run(df, cfg) for cfg in configs]
    defined = pd.concat([pnl for _, _, pnl in runs], axis=1).notna().all(axis=1)
    start = int(np.argmax(defined.to_numpy())) if defined.any() else None
    results = []
    for assets, weights, pnl in runs:
        m = metrics(pnl, weights, start)
        results.append({
            "assets": assets,
            "weights": [nulls(weights[a]) for a in weights.columns],
            "pnl": nulls(pnl),
            "metrics": {k: (None if np.isnan(x) else float(x)) for k, x in m.items()},
        })
    return {"data": path, "dates": dates, "start": start, "results": results}


def grid_bench(metric, path, configs):
    import time
    t0, c0 = time.perf_counter(), time.process_time()
    df, _ = load(path)
    t1, c1 = time.perf_counter(), time.process_time()
    runs = [run(df, cfg) for cfg in configs]
    defined = pd.concat([pnl for _, _, pnl in runs], axis=1).notna().all(axis=1)
    start = int(np.argmax(defined.to_numpy())) if defined.any() else None
    scores = [metrics(pnl, weights, start, [metric])[metric] for _, weights, pnl in runs]
    t2, c2 = time.perf_counter(), time.process_time()
    return {"load_seconds": t1 - t0, "grid_seconds": t2 - t1,
            "load_cpu_seconds": c1 - c0, "grid_cpu_seconds": c2 - c1, "start": start,
            "scores": [None if np.isnan(x) else float(x) for x in scores]}


def main(argv):
    if len(argv) == 5 and argv[1] == "--grid-bench":
        with open(argv[4]) as fh:
            out = grid_bench(argv[2], argv[3], json.load(fh))
    elif len(argv) == 3 and argv[1] == "--batch":
        with open(argv[2]) as fh:
            jobs = json.load(fh)
        out = [grid(job["data"], job["grid"]) for job in jobs]
    elif len(argv) == 3:
        with open(argv[2]) as fh:
            out = grid(argv[1], json.load(fh))
    else:
        raise SystemExit(__doc__)
    # dumps, not dump: dump streams through the pure-Python encoder, one
    # write per token, which took most of the run for a batch of grids.
    sys.stdout.write(json.dumps(out, allow_nan=False))


if __name__ == "__main__":
    main(sys.argv)
