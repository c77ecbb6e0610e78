"""Search for the UNO fast method (see uno_fast.py): the incumbent from the LP
(`start_point`, `improve`), the exact core solvers (`meet_in_middle`, and
`uno_dp.pareto_dp` for one kept budget), and the
branch-and-bound (`search`) over a multiple-choice knapsack whose items are
component configurations (`Items`). Pure numpy/Python.
Cost: improve O(rounds · I log I); meet_in_middle O(2^(core/2) log); search
O(nodes · I).
"""

from __future__ import annotations

import math

import numpy as np

from tandem.placement.uno.dp import pareto_dp

NODE_LIMIT = 1_000
MITM_SIDE = 1 << 17  # combinations per half
PAIR_LIMIT = 1 << 22  # left × right combinations checked exhaustively
NEIGHBOURHOOD_TRIES = 6  # re-pricing rounds of one incumbent DP
NEIGHBOURHOOD_CLASSES = 150  # classes an incumbent DP may change (the rest stay put)
PRICED_ROWS = 3  # budgets besides the kept one paired with it in incumbent DPs


def start_point(items, ncomp: int, cap: np.ndarray, x: np.ndarray, lam: np.ndarray) -> np.ndarray | None:
    """A feasible choice from the LP: each class takes its heaviest LP item;
    if that breaks a budget, repair greedily (switch the class whose change
    removes the most violation per unit of extra cost). None if it fails."""
    comp, cost, use = items.comp_a, items.cost_a, items.use_a
    order = np.lexsort((-x, comp))
    ch = order[np.searchsorted(comp[order], np.arange(ncomp))]
    if not len(cap):
        return ch
    capl = cap + 1e-9 * np.maximum(1.0, np.abs(cap))
    scale = np.maximum(1e-9, np.abs(cap))
    for _ in range(4 * ncomp + 10):
        used = use[ch].sum(axis=0)
        viol = np.maximum(0.0, used - capl) / scale
        if not viol.any():
            return ch
        new_used = used[None, :] + use - use[ch][comp]
        new_viol = (np.maximum(0.0, new_used - capl) / scale).sum(axis=1)
        gain = viol.sum() - new_viol
        dc = cost - cost[ch][comp]
        score = np.where(gain > 1e-12, gain / np.maximum(dc, 1e-9), -np.inf)
        it = int(np.argmax(score))
        if not np.isfinite(score[it]):
            return None
        ch[comp[it]] = it
    return None


def improve(items, ncomp: int, cap: np.ndarray, choice: np.ndarray, rounds: int = 50) -> np.ndarray:
    """Local search on a feasible choice: best single-class change, then best
    pair of changes in two classes (found by sorting moves on their use of the
    tightest budget and a prefix minimum of cost), until neither improves."""
    comp, cost, use = items.comp_a, items.cost_a, items.use_a
    capl = cap + 1e-9 * np.maximum(1.0, np.abs(cap))
    choice = choice.copy()
    for _ in range(rounds):
        used = use[choice].sum(axis=0)
        dc = cost - cost[choice][comp]
        du = use - use[choice][comp]
        ok1 = np.all(used + du <= capl, axis=1) & (dc < -1e-12)
        if ok1.any():
            it = int(np.flatnonzero(ok1)[np.argmin(dc[ok1])])
            choice[comp[it]] = it
            continue
        if not len(cap):
            break
        slack = (capl - used) / np.maximum(1.0, np.abs(cap))
        improved = False
        for d in np.argsort(slack)[: min(len(cap), 4)]:
            new = _best_pair(comp, use, dc, du, capl, used, choice, int(d))
            if new is not None:
                choice = new
                improved = True
                break
        if not improved:
            break
    return choice


def _best_pair(comp, use, dc, du, capl, used, choice, d):
    """The best pair (a lowers cost but overflows budget d, b frees d) that is
    feasible in every budget, or None."""
    resid = capl[d] - used[d]
    A = np.flatnonzero((dc < -1e-12) & (du[:, d] > resid))
    if not len(A):
        return None
    B = np.flatnonzero((du[:, d] < 0) & (dc < -dc[A].min()))
    if not len(B):
        return None
    ob = B[np.argsort(du[B, d], kind="stable")]
    wb = du[ob, d]
    pref = np.minimum.accumulate(dc[ob])
    is_new = np.concatenate([[True], dc[ob][1:] < pref[:-1]])
    arg = np.maximum.accumulate(np.where(is_new, np.arange(len(ob)), 0))
    pos = np.searchsorted(wb, resid - du[A, d], side="right") - 1
    valid = pos >= 0
    if not valid.any():
        return None
    A, pos = A[valid], pos[valid]
    tot = dc[A] + pref[pos]
    for qa in np.argsort(tot)[:50]:
        if tot[qa] >= -1e-12:
            break
        a_it, b_it = int(A[qa]), int(ob[arg[pos[qa]]])
        if comp[a_it] == comp[b_it]:
            continue
        trial = choice.copy()
        trial[comp[a_it]] = a_it
        trial[comp[b_it]] = b_it
        if np.all(use[trial].sum(axis=0) <= capl):
            return trial
    return None


def _neighbourhood_dp(classes, cost, use, lam, cap, capl, choice, keep_r, fix_rows, best, tol):
    """A choice better than `best` by more than `tol` among those that use the
    budgets `fix_rows` exactly as `choice` does in every class (so they stay
    met), found by the DP over budget `keep_r` with the rest priced by λ; None
    if there is none or the DP is too large. The caller checks budgets."""
    scale = 1e-12 * np.maximum(1.0, np.abs(cap[fix_rows]))
    lens = [len(its) for its in classes]
    flat = np.fromiter((it for its in classes for it in its), dtype=np.int64, count=sum(lens))
    owner = np.repeat(np.arange(len(classes)), lens)
    same = np.all(np.abs(use[flat][:, fix_rows] - use[np.asarray(choice)[owner]][:, fix_rows]) <= scale, axis=1)
    mask = np.zeros(len(use), dtype=bool)
    mask[flat[same]] = True
    sub = []
    for q, its in enumerate(classes):
        kept = [it for it in its if mask[it]]
        sub.append(kept if kept else [int(choice[q])])
    lam_k = lam.copy()
    lam_k[keep_r] = 0.0
    # unpriced budgets get a tie-breaking price: at most tol/4 over all classes
    # together, so among (near-)ties the DP keeps the state that loads them least
    unpriced = (lam_k == 0) & (np.arange(len(cap)) != keep_r)
    lam_k[unpriced] = 0.25 * tol / (len(cap) * np.maximum(1.0, np.abs(cap[unpriced])))
    for _ in range(NEIGHBOURHOOD_TRIES):
        c2 = cost + use @ lam_k
        r = pareto_dp(sub, use[:, keep_r], c2, float(capl[keep_r]), best, 0.5 * tol, float(lam_k @ cap))
        if r is None or r[1] is None:
            return None
        over = use[r[1]].sum(axis=0) > capl
        if not over.any():
            return r[1]
        # a budget the candidate breaks gets a real price: double it (from a tenth
        # of the largest multiplier) and solve again
        lam_k[over] = np.maximum(2.0 * lam_k[over], 0.1 * max(float(lam.max()), 1e-9))
    return None


class _Hull:
    """Single-dimension multiple-choice LP over classes (greedy on the lower
    convex hull of each class's (weight, cost') points), used as the bound."""

    def __init__(self, classes: list[list[int]], w: np.ndarray, c: np.ndarray):
        self.start = {}  # class -> item with least weight (ties: least cost)
        inc_cls, inc_from, inc_to, inc_dw, inc_dc = [], [], [], [], []
        for j, its in enumerate(classes):
            its = sorted(its, key=lambda it: (w[it], c[it]))
            self.start[j] = its[0]
            cur = its[0]
            while True:
                best, beff = None, 0.0
                for it in its:
                    dw, dc = w[it] - w[cur], c[it] - c[cur]
                    if dw > 1e-15 and dc < -1e-15:
                        eff = -dc / dw
                        if eff > beff + 1e-15 or (best is not None and abs(eff - beff) <= 1e-15 and dw > w[best] - w[cur]):
                            best, beff = it, eff
                if best is None:
                    break
                inc_cls.append(j); inc_from.append(cur); inc_to.append(best)
                inc_dw.append(w[best] - w[cur]); inc_dc.append(c[best] - c[cur])
                cur = best
        eff = -np.array(inc_dc) / np.maximum(np.array(inc_dw), 1e-300) if inc_dw else np.zeros(0)
        order = np.argsort(-eff, kind="stable")
        self.cls = np.array(inc_cls, dtype=np.int64)[order]
        self.frm = np.array(inc_from, dtype=np.int64)[order]
        self.to = np.array(inc_to, dtype=np.int64)[order]
        self.dw = np.array(inc_dw, dtype=float)[order]
        self.dc = np.array(inc_dc, dtype=float)[order]
        self.start_arr = np.array([self.start[j] for j in range(len(classes))], dtype=np.int64)

    def solve(self, free: np.ndarray, cap: float, w: np.ndarray, c: np.ndarray):
        """LP over classes with free[j]; returns (value, chosen item per free class
        rounded down, break class or -1, residual capacity) or None if infeasible."""
        st = self.start_arr[free]
        base_w = float(w[st].sum())
        rem = cap - base_w
        if rem < -1e-9 * max(1.0, abs(cap)):
            return None
        val = float(c[st].sum())
        m = free[self.cls] if len(self.cls) else np.zeros(0, bool)
        dw, dc = self.dw[m], self.dc[m]
        cum = np.cumsum(dw)
        k = int(np.searchsorted(cum, rem + 1e-12, side="right"))  # increments fully taken
        chosen = self.start_arr.copy()
        if k:
            to = self.to[m][:k]
            chosen[self.cls[m][:k]] = to  # later increments of a class overwrite earlier ones
            val += float(dc[:k].sum())
        brk = -1
        resid = rem - (float(cum[k - 1]) if k else 0.0)
        if k < len(dw):
            frac = resid / dw[k]
            val += frac * dc[k]
            brk = int(self.cls[m][k])
        return val, chosen, brk, resid




def meet_in_middle(classes, cost, use, c2, w, cap, capl, d, lam_o):
    """Exact minimum of Σ c2 over one item per class subject to the kept budget
    d (other budgets priced by λ), by splitting the multi-item classes into two
    halves, enumerating each, and matching every left combination with the
    cheapest right one that fits (sorted weights + prefix minimum).
    Returns (lower bound on the true optimum, best feasible candidate or None),
    (None, None) if even the relaxation is infeasible, or None if too large."""
    ncomp = len(classes)
    single = [j for j in range(ncomp) if len(classes[j]) == 1]
    multi = [j for j in range(ncomp) if len(classes[j]) > 1]
    base = np.array([classes[j][0] for j in range(ncomp)], dtype=np.int64)
    fixed_items = base[single]
    m = len(cap)
    used0 = use[fixed_items].sum(axis=0) if len(fixed_items) else np.zeros(m)
    sizes = [len(classes[j]) for j in multi]
    logs = np.log2(sizes) if sizes else np.zeros(0)
    if logs.sum() > 2 * np.log2(MITM_SIDE):
        return None
    # split so both halves have about the same number of combinations
    left, right, acc = [], [], 0.0
    for j, lg in zip(multi, logs):
        if acc + lg <= logs.sum() / 2 + 1e-9:
            left.append(j); acc += lg
        else:
            right.append(j)

    def enum(cls_list):
        combos = np.zeros((1, 0), dtype=np.int64)
        for j in cls_list:
            its = np.array(classes[j], dtype=np.int64)
            combos = np.concatenate([np.repeat(combos, len(its), axis=0),
                                     np.tile(its, len(combos))[:, None]], axis=1)
        return combos

    L, R = enum(left), enum(right)
    def exhaustive():
        # small core: check every pair against every budget (exact)
        ul = use[L].sum(axis=1) if L.shape[1] else np.zeros((len(L), m))
        ur = use[R].sum(axis=1) if R.shape[1] else np.zeros((len(R), m))
        cl = cost[L].sum(axis=1) if L.shape[1] else np.zeros(len(L))
        cr = cost[R].sum(axis=1) if R.shape[1] else np.zeros(len(R))
        room = capl - used0
        best_v, best_pair = math.inf, None
        step = max(1, PAIR_LIMIT // 8 // max(1, len(R)))
        for b0 in range(0, len(L), step):
            tot_u = ul[b0:b0 + step, None, :] + ur[None, :, :]
            feas = np.all(tot_u <= room, axis=2)
            tot_c = np.where(feas, cl[b0:b0 + step, None] + cr[None, :], np.inf)
            k = int(np.argmin(tot_c))
            if tot_c.flat[k] < best_v:
                best_v, best_pair = float(tot_c.flat[k]), (b0 + k // len(R), k % len(R))
        if best_pair is None:
            return "exact", None
        ch = base.copy()
        if L.shape[1]:
            ch[left] = L[best_pair[0]]
        if R.shape[1]:
            ch[right] = R[best_pair[1]]
        return "exact", ch
    wl = w[L].sum(axis=1) if L.shape[1] else np.zeros(len(L))
    cl = c2[L].sum(axis=1) if L.shape[1] else np.zeros(len(L))
    wr = w[R].sum(axis=1) if R.shape[1] else np.zeros(len(R))
    cr = c2[R].sum(axis=1) if R.shape[1] else np.zeros(len(R))
    rem = (capl[d] - used0[d]) if m else math.inf
    o = np.argsort(wr, kind="stable")
    wr, cr, R = wr[o], cr[o], R[o]
    pm = np.minimum.accumulate(cr)
    # index of the prefix minimum
    is_new = np.concatenate([[True], cr[1:] < pm[:-1]])
    pidx = np.maximum.accumulate(np.where(is_new, np.arange(len(cr)), 0))
    pos = np.searchsorted(wr, rem - wl, side="right") - 1
    ok = pos >= 0
    if not ok.any():
        return None, None
    tot = np.where(ok, cl + pm[np.maximum(pos, 0)], np.inf)
    fixed_c2 = float(c2[fixed_items].sum()) if len(fixed_items) else 0.0
    relax = float(lam_o @ cap) if m else 0.0
    q = int(np.argmin(tot))
    relaxed_lb = float(tot[q]) + fixed_c2 - relax
    ch = base.copy()
    if L.shape[1]:
        ch[left] = L[q]
    if R.shape[1]:
        ch[right] = R[pidx[pos[q]]]
    cu = use[ch].sum(axis=0)
    if np.all(cu <= capl) and float(cost[ch].sum()) <= relaxed_lb + 1e-9 * max(1.0, abs(relaxed_lb)):
        return relaxed_lb, ch  # the relaxation's optimum is feasible: exact
    if len(L) * len(R) <= PAIR_LIMIT:
        return exhaustive()
    return relaxed_lb, ch


def search(items, ncomp: int, cap: np.ndarray, lam: np.ndarray, lb: float, rel_gap: float,
            node_limit: int | None = None, start: np.ndarray | None = None,
            rc: np.ndarray | None = None):
    """LP-bounded branch-and-bound: one budget (the one with the largest λ·cap)
    kept as a knapsack row solved by `_Hull`, the others relaxed with λ. Branches
    on the LP's fractional class, or on a class using a violated budget."""
    if node_limit is None:
        node_limit = NODE_LIMIT  # read at call time so tests can change it
    comp, cost, use = items.comp_a, items.cost_a, items.use_a
    m = len(cap)
    d = int(np.argmax(lam * np.abs(cap))) if m and np.any(lam > 0) else 0
    lam_o = lam.copy()
    if m:
        lam_o[d] = 0.0
    w = use[:, d] if m else np.zeros(len(cost))
    c2 = cost + (use @ lam_o if m else 0.0)
    capd = cap[d] if m else math.inf
    capl = cap + 1e-9 * np.maximum(1.0, np.abs(cap))
    best = [math.inf, None]
    nodes = 0

    def tol_of(v: float) -> float:
        return rel_gap * max(1.0, abs(v)) if math.isfinite(v) else 0.0

    def consider(choice: np.ndarray) -> None:
        u = use[choice].sum(axis=0)
        if np.all(u <= capl):
            v = float(cost[choice].sum())
            if v < best[0]:
                best[0], best[1] = v, np.asarray(choice).copy()

    fixed = np.full(ncomp, -1, dtype=np.int64)
    if start is not None:
        consider(np.asarray(start))
    if best[1] is not None and best[0] - lb <= tol_of(best[0]):
        return best[0], best[1].tolist(), 0, True, d, "lagrangian bound at the root"
    # reduced-cost fixing: an item with lb + rc >= incumbent cannot improve it
    alive = np.ones(len(cost), dtype=bool)
    if rc is not None and math.isfinite(best[0]):
        alive = rc < best[0] - lb - tol_of(best[0])
        alive |= rc <= 1e-12 * max(1.0, abs(lb))  # each class keeps its Lagrangian best
    classes: list[list[int]] = [[] for _ in range(ncomp)]
    for it in np.flatnonzero(alive).tolist():
        classes[comp[it]].append(it)
    # exact enumeration of the core (meet in the middle on the kept budget)
    mitm = meet_in_middle(classes, cost, use, c2, w, cap, capl, d, lam_o)
    if mitm is not None:
        relaxed_lb, cand = mitm
        if cand is not None:
            consider(cand)
        if relaxed_lb == "exact":  # the core was enumerated: nothing better exists
            return best[0], (None if best[1] is None else best[1].tolist()), 0, True, d, "core enumeration"
        if relaxed_lb is None or best[0] - relaxed_lb <= tol_of(best[0]):
            return best[0], (None if best[1] is None else best[1].tolist()), 0, True, d, "meet-in-the-middle bound"
    # exact dynamic programme over the kept budget (others priced by λ)
    if m:
        priced = [int(r) for r in np.argsort(-lam_o * np.abs(cap), kind="stable") if lam_o[r] > 0][:PRICED_ROWS]
        if best[1] is not None and priced:
            for _ in range(3):  # better incumbents: DP over one budget, another budget's use fixed
                before = best[0]
                rows = [d] + priced
                for keep_r in rows:
                    nb_classes = classes
                    if rc is not None and sum(len(c) > 1 for c in classes) > NEIGHBOURHOOD_CLASSES:
                        # large core: free only the classes whose incumbent item is
                        # furthest from its Lagrangian best (highest reduced cost)
                        far = np.argsort(-rc[best[1]], kind="stable")[:NEIGHBOURHOOD_CLASSES]
                        nb_classes = [[int(best[1][q])] for q in range(ncomp)]
                        for q in far.tolist():
                            nb_classes[q] = classes[q]
                    cand = _neighbourhood_dp(nb_classes, cost, use, lam, cap, capl, best[1], keep_r,
                                             [r for r in rows if r != keep_r], best[0], tol_of(best[0]))
                    if cand is not None:
                        consider(cand)
                        if best[0] - lb <= tol_of(best[0]):
                            return best[0], best[1].tolist(), 0, True, d, "lagrangian bound (DP incumbent)"
                if best[0] >= before:
                    break
        relax = float(lam_o @ cap)
        dp = pareto_dp(classes, w, c2, float(capl[d]), best[0], tol_of(best[0]), relax)
        if dp is not None:
            dp_lb, cand = dp
            if cand is not None:
                consider(cand)
            if best[1] is not None and best[0] - dp_lb <= tol_of(best[0]):
                return best[0], best[1].tolist(), 0, True, d, "knapsack DP bound"
            if best[1] is None and dp_lb == math.inf:
                return best[0], None, 0, True, d, "knapsack DP bound"
    hull = _Hull(classes, w, c2)

    def bound_of(free: np.ndarray):
        fx = fixed[~free]
        used = use[fx].sum(axis=0) if len(fx) else np.zeros(m)
        if m and np.any(used > capl):
            return None
        r = hull.solve(free, capd - (used[d] if m else 0.0), w, c2)
        if r is None:
            return None
        val, chosen, brk, resid = r
        fixed_cost = float(cost[fx].sum()) if len(fx) else 0.0
        relax = float(lam_o @ (cap - used)) if m else 0.0
        # chosen: LP pick for free classes (break class at its lower point)
        full = np.where(free, chosen, fixed)
        return val + fixed_cost - relax, full, brk, resid

    def greedy_fill(full: np.ndarray, resid: float, free: np.ndarray) -> np.ndarray:
        full = full.copy()
        if not len(hull.cls):
            return full
        for q in range(len(hull.cls)):
            j = hull.cls[q]
            if free[j] and full[j] == hull.frm[q] and hull.dw[q] <= resid + 1e-12:
                full[j] = hull.to[q]
                resid -= hull.dw[q]
        return full

    def dfs(free: np.ndarray) -> bool:
        nonlocal nodes
        nodes += 1
        if nodes > node_limit:
            return False
        b = bound_of(free)
        if b is None:
            return True
        val, full, brk, resid = b
        if val >= best[0] - tol_of(best[0]):
            return True
        if brk < 0 or nodes == 1:
            consider(full)
        if brk >= 0:
            consider(greedy_fill(full, resid, free))
            if val >= best[0] - tol_of(best[0]):
                return True
            j = brk
        else:
            if best[0] <= val + tol_of(best[0]):
                return True  # the LP point is feasible and meets the bound
            cand = np.flatnonzero(free)
            if not len(cand):
                return True
            u = use[full].sum(axis=0)
            viol = np.flatnonzero(u > capl)
            if len(viol):
                dv = viol[np.argmax((u - cap)[viol] / np.maximum(1.0, np.abs(cap[viol])))]
                j = int(cand[np.argmax(use[full[cand], dv])])
            else:  # feasible, but the relaxed budgets leave a gap: branch on the widest class
                spread = np.array([np.ptp(c2[classes[q]]) if len(classes[q]) > 1 else -1.0 for q in cand])
                if spread.max() < 0:
                    return True
                j = int(cand[np.argmax(spread)])
        order = sorted(classes[j], key=lambda it: (it != full[j], c2[it]))
        free[j] = False
        ok = True
        for it in order:
            fixed[j] = it
            if not dfs(free):
                ok = False
                break
        fixed[j] = -1
        free[j] = True
        return ok

    complete = dfs(np.ones(ncomp, dtype=bool))
    return best[0], (None if best[1] is None else best[1].tolist()), nodes, complete, d, "branch-and-bound"
