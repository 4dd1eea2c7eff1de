"""poplibs' cycle estimators for a product's plan, written apart from sim/pricing so that a
transcription slip in either shows: given the plan `ipusim price --json` printed (the shape, the
split, the vertex), recompute the cycles of its vertex, its reduction and its exchanges from the
formulas of graphcore/poplibs @7eac0f26 (lib/poplin/PerformanceEstimation.hpp,
ConvReducePlan.cpp, ConvModel.cpp's addExchangeCycleEstimates, ExchangeEstimator.hpp).

Mk2 tile: 6 workers, 16 conv units, 4-deep chains, ld128 coefficient loads, 4 exchange bytes a
cycle per tile, 2 tiles per exchange bus, a 64-bit datapath."""

import math

WORKERS = 6
CONV_UNITS = 16


def cdiv(a, b):
    return -(-a // b)


def worker_runs(positions, row, workers=WORKERS):
    """partitionConvPartialByWorker: contiguous runs, cut at row ends."""
    runs = []
    for w in range(workers):
        lo, hi = positions * w // workers, positions * (w + 1) // workers
        mine = []
        while lo < hi:
            stop = min(hi, (lo // max(row, 1) + 1) * max(row, 1))
            mine.append(stop - lo)
            lo = stop
        runs.append(mine)
    return runs


def amp_in_chans(fp32):
    return 4 * (2 if fp32 else 4)


def weight_loads(fp32):
    # ld128's 16 bytes a cycle, halved: use128BitConvUnitLoad is off by default
    return CONV_UNITS * amp_in_chans(fp32) * (4 if fp32 else 2) // 8


def zeroing(t):
    """estimateZeroSupervisorCycles: float partials, 2 a cycle, 14 - 9 cycles a worker."""
    per_worker = cdiv(t["positions"] * t["out_chans_per_group"], WORKERS)
    return (cdiv(per_worker, 2) + 5) * WORKERS * t["out_groups"] * t["conv_groups"]


def one_by_one(t, fp32_in, fp32_partials):
    common = (not fp32_in and CONV_UNITS == 16) or fp32_partials
    keep_total, keep_pass = (7, 3) if (not fp32_in and (fp32_partials or CONV_UNITS == 16)) else (0, 0)
    zc = 8 if fp32_in and CONV_UNITS == 16 else (4 if fp32_partials else 2)

    def worker(n, zero):
        z = 1 if zero else 0
        if fp32_in:
            c = {0: 24, 1: 47 + (2 + zc) * z, 2: 46 + (2 + 2 * zc) * z}.get(
                n, 46 + (2 + zc * n) * z + (n - 3) * 8)
        elif common:
            c = {0: 20 + (1 if zero else 2), 1: 31 + (1 if zero else 2),
                 2: 40 + (1 if zero else 2)}.get(n, (37 if zero else 38) + (n - 3) * 4)
        else:
            c = {0: 24, 1: 39 + (2 + zc) * z, 2: 40 + (2 + 2 * zc) * z}.get(
                n, 41 + (2 + zc * n) * z + (n - 3) * 4)
        return c - keep_total

    def inner(zero):
        each = [WORKERS * (worker(r[0][0], zero) if r else 0) for r in t["worklists"]]
        return max(max(each), min(each) + 14)

    g, i, o = t["conv_groups"], t["in_groups"], t["out_groups"]
    passes = cdiv(t["out_chans_per_group"], CONV_UNITS)
    loads = weight_loads(fp32_in)
    c = 1 if common else 0
    return (50 + WORKERS * (keep_total + keep_pass * (i * g - 1)) +
            g * (12 + c + (i - 1) * (15 - c + 1 + o * (19 + passes * (6 + loads + inner(False)))) +
                 (10 + 1 + o * (19 - c + passes * (7 + loads + inner(True))))))


def n_by_one(t, kh, kw, fp32_in, fp32_partials):
    extra = 1 if ((not fp32_in and not fp32_partials and CONV_UNITS == 16) or
                  (not fp32_in and fp32_partials and CONV_UNITS == 8)) else 0

    def worker(runs):
        c = 17 + (0 if fp32_partials else 1)
        for n, count in runs:
            if n == 0:
                entry = 17
            elif n == 1:
                entry = 33 if fp32_in else 29
            elif n == 2:
                entry = 44 if fp32_in else 33 + extra
            else:
                entry = (45 if fp32_in else 34) + (n - 3) * (8 if fp32_in else 4)
            c += count * (3 + entry - 9)
        return c

    each = [WORKERS * worker(r) for r in t["worklists"]]
    passes = cdiv(t["out_chans_per_group"], CONV_UNITS)
    innermost = weight_loads(fp32_in) + 15 + 3
    loop = kh * (14 + kw * (12 + passes * innermost)) + max(max(each), min(each) + 9) * passes * kh * kw
    g, i, o = t["conv_groups"], t["in_groups"], t["out_groups"]
    return (109 + WORKERS * 9 + WORKERS * (9 if fp32_partials else 10) +
            g * (o * 17 + (o - 1) * 6 + 1) + (g - 1) * 6 + 1 +
            g * (16 + i * (14 + o * (14 + loop))) + zeroing(t))


def hmac(t, kh, kw, fp32_in, fp32_partials):
    use_1x1 = fp32_partials and not fp32_in and kh == 1 and kw == 1
    width = 2 if fp32_in else 4
    half_half = not fp32_in and not fp32_partials
    outs = 2 if half_half else 1

    def dot(size):
        base = 3 * outs + (1 if half_half else 0) + 4
        w = width
        while w >= 1:
            if size % w == 0:
                per = 1 if w >= (2 if fp32_in else 4) else 2
                more = outs if w < (2 if fp32_in else 4) else 0
                return base + more + (size // w) * per - (0 if fp32_in else 1)
            w //= 2

    out_chans = t["out_chans_per_group"] if fp32_partials else cdiv(t["out_chans_per_group"], 2)
    d = dot(t["in_chans_per_group"])

    def row(runs):
        c = 16 - (15 if use_1x1 else (0 if fp32_in else 6))
        for n, count in runs:
            if n == 0:
                c += count * 7
            elif use_1x1 and out_chans == 1:
                c += count * (14 + n * (2 + d))
            else:
                c += count * ((13 if use_1x1 else 19) + n * (7 + out_chans * d))
        return c

    each = [WORKERS * (kh * kw * row(r) + 16) for r in t["worklists"]]
    inner = max(max(each), min(each))
    g, i, o = t["conv_groups"], t["in_groups"], t["out_groups"]
    unzeroed = use_1x1 and i == 1 and t["out_chans_per_group"] == 1
    return ((58 if fp32_in else 65) - (10 if use_1x1 else 0) + WORKERS * (9 if fp32_partials else 10) +
            WORKERS * (15 if use_1x1 else (0 if fp32_partials else 6)) +
            g * (23 + i * (15 + o * (10 + inner))) + (0 if unzeroed else zeroing(t)))


def reduce_stages(depth):
    n = 3 if depth >= 125 else (2 if depth >= 16 else 1)

    def plan(p, k):
        if k == 1:
            return [], float(p)
        down = int(math.pow(p, (k - 1.0) / k))
        a, ca = plan(down, k - 1)
        b, cb = plan(down + 1, k - 1)
        ca += p / down
        cb += p / (down + 1)
        return ([down] + a, ca) if ca < cb else ([down + 1] + b, cb)
    return plan(depth, n)[0]


def reduce_vertex(out_size, depth, out_fp32, partials_fp32, single):
    acc = 4 if partials_fp32 else 8
    in_path = 64 // ((4 if partials_fp32 else 2) * 8)
    if single:
        loops = out_size // acc
        per = cdiv(loops, WORKERS)
        tail = (8 if out_fp32 else 7) if partials_fp32 else (10 if out_fp32 else 9)
        return (20 + (acc // min(acc, in_path) * depth + tail) * per) * WORKERS + 33
    c = 32
    loops = out_size // acc + sum(1 for b in range(int(math.log2(acc))) if out_size & (1 << b))
    per = loops // WORKERS
    if loops % WORKERS:
        if out_size & (acc - 1):
            c += 2 * depth + (13 if partials_fp32 else 11)
        else:
            per += 1
    tail = (7 if partials_fp32 else 9) if out_fp32 else (6 if partials_fp32 else 8)
    return (c + (((acc // min(acc, in_path)) + 1) * depth + tail) * per) * WORKERS


def conv_reduce(outputs, depth, out_fp32, partials_fp32, tile_memory):
    if depth <= 1:
        if out_fp32 == partials_fp32:
            return 0
        per = cdiv(outputs, WORKERS)
        return (max(cdiv(per, 2 if partials_fp32 else 4), cdiv(per, 2 if out_fp32 else 4)) + 26) * WORKERS
    fast = 4 if partials_fp32 else 8
    pbytes = 4 if partials_fp32 else 2
    element = 16 * 1024
    left, size, cycles = depth, outputs * depth, 0

    def one(d, last):
        single = size % fast == 0 and cdiv((d - 1) * size * pbytes, element) * element < tile_memory // 16
        return reduce_vertex(size, d - (1 if single else 0), out_fp32 if last else partials_fp32,
                             partials_fp32, single)
    for f in reduce_stages(depth):
        d = cdiv(left, f)
        left = cdiv(left, d)
        size = cdiv(size, d)
        cycles += one(d, left == 1)
    if left > 1:
        size = cdiv(size, left)
        cycles += one(left, True)
    return cycles


def plan_cycles(p, fp32_in, fp32_partials, tile_memory):
    """The plan's cycles, part by part, as poplibs' estimators give them."""
    s, split, t = p["shape"], p["split"], p["tile"]
    kh, kw = s["kernel_height"], s["kernel_width"]
    if p["vertex"] == "AMP 1x1":
        vertex = one_by_one(t, fp32_in, fp32_partials)
    elif p["vertex"] == "AMP nx1":
        vertex = n_by_one(t, kh, kw, fp32_in, fp32_partials)
    else:
        vertex = hmac(t, kh, kw, fp32_in, fp32_partials)
    groups, positions = t["conv_groups"], t["positions"]
    in_c = t["in_groups"] * t["in_chans_per_group"]
    out_c = t["out_groups"] * t["out_chans_per_group"]
    if kh == 1 and kw == 1:
        read = positions * s["stride"] * s["stride_width"]
    else:
        rows, cols = cdiv(positions, s["out_width"]), min(positions, s["out_width"])
        read = ((rows - 1) * s["stride"] + kh) * ((cols - 1) * s["stride_width"] + kw)
    ebytes = 4 if fp32_in else 2
    inputs = groups * read * in_c
    inputs -= inputs // split["out_chans"]
    weights = groups * kh * kw * in_c * out_c
    weights -= weights // split["field"]
    bus = 2 if split["out_chans"] % 2 == 0 else 1
    depth = split["in_chans"]
    partials = groups * positions * out_c
    pbytes = 4 if fp32_partials else 2
    first = cdiv(partials * (pbytes if depth > 1 else ebytes), 4)
    later = 0
    if depth > 1:
        left, size, stage = depth, partials, 0
        for f in reduce_stages(depth):
            if stage:
                later += cdiv(size * pbytes, 4)
            d = cdiv(left, f)
            size, left, stage = cdiv(size, d), cdiv(left, d), stage + 1
        if left > 1 and stage:
            later += cdiv(size * pbytes, 4)
    return {"input_exchange": cdiv(inputs * ebytes, 4 * bus),
            "weight_exchange": cdiv(weights * ebytes, 4),
            "partial_exchange": first + later,
            "vertex": vertex,
            "reduce": conv_reduce(cdiv(partials, depth), depth, fp32_in, fp32_partials, tile_memory)}
