"""A small modelling layer over HiGHS (highspy) shared by every placement engine.

Inputs: variables keyed by domain objects (any hashable: an NF name, a tuple
(nf, device), a flow id ...), linear expressions built with + - * and sums,
named constraints, an objective sense, and typed `SolverOptions`.
Output: a `Solution` whose `status` is a `Status` enum mapped from HiGHS's model
status (always checked), with objective, dual bound, relative gap, solve time
and values by key. An infeasible model raises `InfeasibleError`, which names the
constraints of an irreducible infeasible subsystem where one can be found.

The matrix is assembled in bulk: expressions are kept as coordinate triplets,
array-shaped variable and constraint blocks (`add_vars`, `add_rows`) take numpy
arrays, and `solve` hands HiGHS columns with one `addCols` and rows with
`addRows` in batches, so models with millions of variables stay practical;
entries naming one column twice in a row are summed, and a build call HiGHS
refuses raises `SolverError` (it would otherwise solve the model without it).
State: a `Model` is mutable until solved; it may be solved again after changes.
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
import time
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Union

import highspy
import numpy as np

from tandem.placement.errors import PlacementInfeasible

__all__ = [
    "VarType",
    "Sense",
    "Status",
    "SolverOptions",
    "Var",
    "VarBlock",
    "LinExpr",
    "Constraint",
    "Model",
    "Solution",
    "SolverError",
    "InfeasibleError",
    "quicksum",
]

INF = math.inf
_ROW_BATCH = 1 << 20  # rows per addRows call


_banner_swallowed = False


def new_highs() -> highspy.Highs:
    """A fresh `highspy.Highs`. HiGHS prints a banner on stdout when the process
    constructs its first instance, before any option can be set; the first one
    is therefore built with file descriptor 1 pointed at /dev/null, so solver
    text never reaches stdout (`tandem place --json` stays pure JSON)."""
    global _banner_swallowed
    if _banner_swallowed:
        return highspy.Highs()
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        h = highspy.Highs()
        _libc_fflush()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)
    _banner_swallowed = True
    return h


def _libc_fflush() -> None:
    """Flush C stdio buffers (the banner may sit there when stdout is a pipe)."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # pragma: no cover - no C library handle
        pass


class VarType(Enum):
    CONTINUOUS = "continuous"
    INTEGER = "integer"
    BINARY = "binary"


class Sense(Enum):
    MINIMIZE = "minimize"
    MAXIMIZE = "maximize"


class Status(Enum):
    """What the solver proved. Only OPTIMAL means the objective is proven optimal
    (up to `mip_rel_gap`); TIME_LIMIT / ITERATION_LIMIT / INTERRUPTED may carry a
    feasible incumbent (`Solution.has_solution`)."""

    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    INFEASIBLE_OR_UNBOUNDED = "infeasible_or_unbounded"
    TIME_LIMIT = "time_limit"
    ITERATION_LIMIT = "iteration_limit"
    INTERRUPTED = "interrupted"
    EMPTY = "empty"
    ERROR = "error"


_MS = highspy.HighsModelStatus
_STATUS_MAP: dict[Any, Status] = {
    _MS.kOptimal: Status.OPTIMAL,
    _MS.kInfeasible: Status.INFEASIBLE,
    _MS.kUnbounded: Status.UNBOUNDED,
    _MS.kUnboundedOrInfeasible: Status.INFEASIBLE_OR_UNBOUNDED,
    _MS.kTimeLimit: Status.TIME_LIMIT,
    _MS.kIterationLimit: Status.ITERATION_LIMIT,
    _MS.kSolutionLimit: Status.INTERRUPTED,
    _MS.kInterrupt: Status.INTERRUPTED,
    _MS.kHighsInterrupt: Status.INTERRUPTED,
    _MS.kObjectiveBound: Status.INTERRUPTED,
    _MS.kObjectiveTarget: Status.INTERRUPTED,
    _MS.kModelEmpty: Status.EMPTY,
}


class SolverError(RuntimeError):
    """HiGHS failed or ended in a state that carries no usable answer."""

    def __init__(self, message: str, status: Status = Status.ERROR):
        super().__init__(message)
        self.status = status


class InfeasibleError(SolverError, PlacementInfeasible):
    """The model has no feasible point. `constraints` names the rows of an
    irreducible infeasible subsystem (IIS) when one was found, else is empty."""

    def __init__(self, message: str, constraints: Sequence[str] = ()):
        SolverError.__init__(self, message, Status.INFEASIBLE)
        self.constraints = list(constraints)
        self.binding = self.constraints


@dataclass(frozen=True)
class SolverOptions:
    """Typed HiGHS options. `None` keeps HiGHS's default."""

    time_limit_s: float | None = None
    mip_rel_gap: float | None = 1e-9
    threads: int | None = None  # None: share the process's HiGHS scheduler (safe beside other highspy users)
    presolve: bool = True
    log: bool = False
    explain_infeasible: bool = True  # compute an IIS on infeasibility (costs one more solve)
    lp_method: str | None = None  # HiGHS `solver` for LPs: "simplex", "ipm" or "pdlp" (None: HiGHS's choice)
    mip_heuristic_effort: float | None = None  # HiGHS `mip_heuristic_effort` (None: HiGHS's default)
    feasibility_tol: float | None = None  # HiGHS primal and MIP feasibility tolerance (None: HiGHS's 1e-7 / 1e-6)
    # MIPs: stop HiGHS (as proven) once its own incumbent and dual bound are within
    # `mip_rel_gap` relative to max(1, |incumbent|). HiGHS 1.16 at gap 1e-9 can keep
    # branching and running sub-MIPs with both bounds equal; this ends that wait.
    gap_guard: bool = True

    def __post_init__(self) -> None:
        if self.lp_method not in (None, "simplex", "ipm", "pdlp"):
            raise ValueError(f"SolverOptions.lp_method must be simplex, ipm or pdlp, got {self.lp_method!r}")
        if self.time_limit_s is not None and not self.time_limit_s > 0:
            raise ValueError(f"SolverOptions.time_limit_s must be > 0, got {self.time_limit_s}")
        if self.mip_rel_gap is not None and self.mip_rel_gap < 0:
            raise ValueError(f"SolverOptions.mip_rel_gap must be >= 0, got {self.mip_rel_gap}")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"SolverOptions.threads must be >= 1, got {self.threads}")
        if self.feasibility_tol is not None and not self.feasibility_tol > 0:
            raise ValueError(f"SolverOptions.feasibility_tol must be > 0, got {self.feasibility_tol}")


# ---------------------------------------------------------------- expressions

Number = Union[int, float]


class LinExpr:
    """sum(coef * var) + constant, as parallel index/coef lists (duplicates allowed,
    summed by HiGHS-side assembly)."""

    __slots__ = ("idx", "coef", "const")

    def __init__(self, idx: list[int] | None = None, coef: list[float] | None = None, const: float = 0.0):
        self.idx = idx if idx is not None else []
        self.coef = coef if coef is not None else []
        self.const = float(const)

    @staticmethod
    def of(x: "ExprLike") -> "LinExpr":
        if isinstance(x, LinExpr):
            return x
        if isinstance(x, Var):
            return LinExpr([x.index], [1.0])
        if isinstance(x, (int, float, np.integer, np.floating)):
            return LinExpr(const=float(x))
        raise TypeError(f"not a linear expression: {x!r}")

    def copy(self) -> "LinExpr":
        return LinExpr(list(self.idx), list(self.coef), self.const)

    def __iadd__(self, other: "ExprLike") -> "LinExpr":
        o = LinExpr.of(other)
        self.idx.extend(o.idx)
        self.coef.extend(o.coef)
        self.const += o.const
        return self

    def __add__(self, other: "ExprLike") -> "LinExpr":
        return self.copy().__iadd__(other)

    __radd__ = __add__

    def __neg__(self) -> "LinExpr":
        return LinExpr(list(self.idx), [-c for c in self.coef], -self.const)

    def __sub__(self, other: "ExprLike") -> "LinExpr":
        return self + (-LinExpr.of(other))

    def __rsub__(self, other: "ExprLike") -> "LinExpr":
        return LinExpr.of(other) + (-self)

    def __mul__(self, k: Number) -> "LinExpr":
        if not isinstance(k, (int, float, np.integer, np.floating)):
            raise TypeError("only multiplication by a number keeps an expression linear")
        k = float(k)
        return LinExpr(list(self.idx), [c * k for c in self.coef], self.const * k)

    __rmul__ = __mul__

    def __le__(self, rhs: "ExprLike") -> "Constraint":  # type: ignore[override]
        d = self - rhs
        return Constraint(d, -INF, -d.const)

    def __ge__(self, rhs: "ExprLike") -> "Constraint":  # type: ignore[override]
        d = self - rhs
        return Constraint(d, -d.const, INF)

    def __eq__(self, rhs: "ExprLike") -> "Constraint":  # type: ignore[override]
        d = self - rhs
        return Constraint(d, -d.const, -d.const)

    __hash__ = None  # type: ignore[assignment]

    def value(self, x: np.ndarray) -> float:
        if not self.idx:
            return self.const
        return float(np.dot(np.asarray(self.coef), x[np.asarray(self.idx, dtype=np.int64)]) + self.const)


@dataclass(frozen=True, eq=False)
class Var:
    """One model column. Arithmetic on it builds `LinExpr`s."""

    index: int
    key: Hashable

    def _e(self) -> LinExpr:
        return LinExpr([self.index], [1.0])

    def __add__(self, o: "ExprLike") -> LinExpr:
        return self._e() + o

    __radd__ = __add__

    def __sub__(self, o: "ExprLike") -> LinExpr:
        return self._e() - o

    def __rsub__(self, o: "ExprLike") -> LinExpr:
        return LinExpr.of(o) - self._e()

    def __neg__(self) -> LinExpr:
        return -self._e()

    def __mul__(self, k: Number) -> LinExpr:
        return self._e() * k

    __rmul__ = __mul__

    def __le__(self, rhs: "ExprLike") -> "Constraint":
        return self._e() <= rhs

    def __ge__(self, rhs: "ExprLike") -> "Constraint":
        return self._e() >= rhs

    def __eq__(self, rhs: "ExprLike") -> "Constraint":  # type: ignore[override]
        return self._e() == rhs

    def __hash__(self) -> int:
        return hash(("Var", self.index))


ExprLike = Union[LinExpr, Var, int, float]


def quicksum(terms: Iterable[ExprLike]) -> LinExpr:
    """Sum of expressions/vars/numbers without quadratic copying."""
    out = LinExpr()
    for t in terms:
        out += t
    return out


@dataclass
class Constraint:
    """lower <= expr (without its constant) <= upper; `name` is set by the model."""

    expr: LinExpr
    lower: float
    upper: float
    name: str = ""


@dataclass(frozen=True)
class VarBlock:
    """Variables added in bulk: `indices[i]` is the column of `keys[i]`."""

    keys: Sequence[Hashable]
    indices: np.ndarray

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i: int) -> Var:
        return Var(int(self.indices[i]), self.keys[i])


# ---------------------------------------------------------------------- model

class Model:
    """Columns, rows and objective; `solve()` builds the HiGHS model in bulk."""

    def __init__(self, name: str = "model", sense: Sense = Sense.MINIMIZE):
        self.name = name
        self.sense = sense
        self._keys: list[Hashable] = []
        self._key_index: dict[Hashable, int] | None = {}
        self._lb: list[np.ndarray] = []
        self._fixed: list[tuple[np.ndarray, np.ndarray]] = []
        self._ub: list[np.ndarray] = []
        self._type: list[np.ndarray] = []  # uint8: 0 continuous, 1 integer
        self._ncols = 0
        self._obj = LinExpr()
        self._obj_dense: list[tuple[np.ndarray, np.ndarray]] = []
        # rows as coordinate triplets, appended in chunks
        self._r_row: list[np.ndarray] = []
        self._r_col: list[np.ndarray] = []
        self._r_val: list[np.ndarray] = []
        self._r_lo: list[np.ndarray] = []
        self._r_up: list[np.ndarray] = []
        self._r_names: list[tuple[int, Any]] = []  # (first row, list of names or a prefix+keys)
        self._nrows = 0
        self._row_names_cache: list[str] | None = None

    # -- variables
    @property
    def num_vars(self) -> int:
        return self._ncols

    @property
    def num_constraints(self) -> int:
        return self._nrows

    def _register_keys(self, keys: Sequence[Hashable]) -> None:
        kidx = self._key_index
        assert kidx is not None
        base = self._ncols
        for i, k in enumerate(keys):
            if k in kidx:
                raise ValueError(f"model {self.name!r}: duplicate variable key {k!r}")
            kidx[k] = base + i
        self._keys.extend(keys)

    def add_var(self, key: Hashable, vtype: VarType = VarType.CONTINUOUS, lb: float = 0.0, ub: float = INF) -> Var:
        return self.add_vars([key], vtype, lb, ub)[0]

    def binary(self, key: Hashable) -> Var:
        return self.add_var(key, VarType.BINARY)

    def integer(self, key: Hashable, lb: float = 0.0, ub: float = INF) -> Var:
        return self.add_var(key, VarType.INTEGER, lb, ub)

    def continuous(self, key: Hashable, lb: float = 0.0, ub: float = INF) -> Var:
        return self.add_var(key, VarType.CONTINUOUS, lb, ub)

    def add_vars(self, keys: Sequence[Hashable], vtype: VarType = VarType.CONTINUOUS,
                 lb: float | np.ndarray = 0.0, ub: float | np.ndarray = INF) -> VarBlock:
        """Add len(keys) columns at once; lb/ub are scalars or arrays."""
        n = len(keys)
        keys = list(keys)
        self._register_keys(keys)
        lo = np.broadcast_to(np.asarray(lb, dtype=np.float64), (n,)).copy()
        up = np.broadcast_to(np.asarray(ub, dtype=np.float64), (n,)).copy()
        if vtype is VarType.BINARY:
            lo = np.maximum(lo, 0.0)
            up = np.minimum(up, 1.0)
        self._lb.append(lo)
        self._ub.append(up)
        self._type.append(np.full(n, 0 if vtype is VarType.CONTINUOUS else 1, dtype=np.uint8))
        idx = np.arange(self._ncols, self._ncols + n, dtype=np.int64)
        self._ncols += n
        return VarBlock(keys, idx)

    def var(self, key: Hashable) -> Var:
        assert self._key_index is not None
        try:
            return Var(self._key_index[key], key)
        except KeyError:
            raise KeyError(f"model {self.name!r} has no variable {key!r}") from None

    def keyed_columns(self, first: Sequence[Hashable]) -> Iterable[tuple[Hashable, int]]:
        """(key, column) of every variable whose key is a tuple starting with one of `first`."""
        wanted = set(first)
        for col, k in enumerate(self._keys):
            if isinstance(k, tuple) and k and k[0] in wanted:
                yield k, col

    def dual_bound(self, row_duals: np.ndarray) -> tuple[float, np.ndarray]:
        """A rigorous lower bound (minimisation) from any row multipliers y, and
        the reduced costs r = c − Aᵀy. Weak duality: for every x within the
        column bounds with every row in [lo, up],
            c·x ≥ Σ_r y_r·(lo_r if y_r ≥ 0 else up_r) + Σ_j r_j·(lb_j if r_j ≥ 0 else ub_j) + const,
        and c·x exceeds that by at least |r_j|·|x_j − the bound used|. Each y_r
        whose bound is infinite is taken as 0; so an approximate LP dual (a
        first-order method's, or HiGHS's within tolerances) still yields a
        valid bound. Columns must have finite bounds."""
        n, m = self._ncols, self._nrows
        lb = np.concatenate(self._lb) if self._lb else np.zeros(0)
        ub = np.concatenate(self._ub) if self._ub else np.zeros(0)
        if not (np.all(np.isfinite(lb)) and np.all(np.isfinite(ub))):
            raise ValueError("dual_bound needs finite column bounds")
        cost = self.objective_vector()[0]
        y = np.asarray(row_duals, dtype=float).copy()
        y[~np.isfinite(y)] = 0.0
        lo = np.concatenate(self._r_lo) if m else np.zeros(0)
        up = np.concatenate(self._r_up) if m else np.zeros(0)
        y = np.where(np.isinf(lo) & (y > 0), 0.0, y)
        y = np.where(np.isinf(up) & (y < 0), 0.0, y)
        r = cost.copy()
        if m:
            rows = np.concatenate(self._r_row)
            cols = np.concatenate(self._r_col)
            vals = np.concatenate(self._r_val)
            np.subtract.at(r, cols, vals * y[rows])
        rows_part = float(np.sum(np.where(y > 0, y * np.where(np.isfinite(lo), lo, 0.0), 0.0))
                          + np.sum(np.where(y < 0, y * np.where(np.isfinite(up), up, 0.0), 0.0)))
        cols_part = float(np.sum(np.where(r >= 0, r * lb, r * ub)))
        sign = 1.0 if self.sense is Sense.MINIMIZE else -1.0
        if sign < 0:
            raise ValueError("dual_bound is for minimisation models")
        return rows_part + cols_part + float(self._obj.const), r

    def objective_vector(self) -> tuple[np.ndarray, float]:
        """The objective as (cost per column, constant)."""
        cost = np.zeros(self._ncols)
        if self._obj.idx:
            np.add.at(cost, np.asarray(self._obj.idx, dtype=np.int64), np.asarray(self._obj.coef))
        for idx, c in self._obj_dense:
            np.add.at(cost, idx, c)
        return cost, float(self._obj.const)

    def has_var(self, key: Hashable) -> bool:
        assert self._key_index is not None
        return key in self._key_index

    # -- objective
    def set_objective(self, expr: ExprLike, sense: Sense | None = None) -> None:
        self._obj = LinExpr.of(expr).copy()
        self._obj_dense = []
        if sense is not None:
            self.sense = sense

    def set_objective_constant(self, c: float) -> None:
        """Set the objective's constant term, keeping its linear terms."""
        self._obj.const = float(c)

    def add_objective_terms(self, indices: np.ndarray, coefs: np.ndarray) -> None:
        """Add coef*x terms to the objective in bulk."""
        self._obj_dense.append((np.asarray(indices, dtype=np.int64), np.asarray(coefs, dtype=np.float64)))

    # -- constraints
    def add_constraint(self, c: Constraint, name: str) -> Constraint:
        """Add one named row. `name` is what errors report."""
        if not isinstance(c, Constraint):
            raise TypeError(f"constraint {name!r}: expected a comparison of expressions, got {c!r}")
        c.name = name
        n = len(c.expr.idx)
        r = self._nrows
        self._r_row.append(np.full(n, r, dtype=np.int64))
        self._r_col.append(np.asarray(c.expr.idx, dtype=np.int64))
        self._r_val.append(np.asarray(c.expr.coef, dtype=np.float64))
        self._r_lo.append(np.array([c.lower]))
        self._r_up.append(np.array([c.upper]))
        self._r_names.append((r, [name]))
        self._nrows += 1
        self._row_names_cache = None
        return c

    def add_rows(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, lower: np.ndarray | float,
                 upper: np.ndarray | float, num_rows: int, names: Sequence[str] | tuple[str, Sequence[Hashable]]) -> range:
        """Add `num_rows` rows in bulk from coordinate triplets; `rows` are 0-based
        within this block. `names` is a list of names or (prefix, keys) which names
        row i as f"{prefix}[{keys[i]!r}]" lazily. Returns the global row range."""
        r0 = self._nrows
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size and (rows.min() < 0 or rows.max() >= num_rows):
            raise ValueError("add_rows: row index out of the block")
        self._r_row.append(rows + r0)
        self._r_col.append(np.asarray(cols, dtype=np.int64))
        self._r_val.append(np.asarray(vals, dtype=np.float64))
        self._r_lo.append(np.broadcast_to(np.asarray(lower, dtype=np.float64), (num_rows,)).copy())
        self._r_up.append(np.broadcast_to(np.asarray(upper, dtype=np.float64), (num_rows,)).copy())
        self._r_names.append((r0, names))
        self._nrows += num_rows
        self._row_names_cache = None
        return range(r0, r0 + num_rows)

    def row_name(self, r: int) -> str:
        for start, names in reversed(self._r_names):
            if r >= start:
                i = r - start
                if isinstance(names, tuple):
                    prefix, keys = names
                    return f"{prefix}[{keys[i]!r}]"
                return str(names[i])
        return f"row{r}"

    def row_names(self) -> list[str]:
        if self._row_names_cache is None:
            self._row_names_cache = [self.row_name(r) for r in range(self._nrows)]
        return self._row_names_cache

    # -- solving
    def _build(self, h: highspy.Highs, relax: bool = False) -> None:
        n = self._ncols
        lb = np.concatenate(self._lb) if self._lb else np.zeros(0)
        ub = np.concatenate(self._ub) if self._ub else np.zeros(0)
        cost = np.zeros(n)
        if self._obj.idx:
            np.add.at(cost, np.asarray(self._obj.idx, dtype=np.int64), np.asarray(self._obj.coef))
        for idx, c in self._obj_dense:
            np.add.at(cost, idx, c)
        inf = h.getInfinity()
        lb = np.where(np.isinf(lb), -inf, lb)
        ub = np.where(np.isinf(ub), inf, ub)
        self._check(h.addCols(n, cost, lb, ub, 0, np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0)),
                    "its columns")
        self._check(h.changeObjectiveOffset(self._obj.const), "its objective constant")
        self._check(h.changeObjectiveSense(highspy.ObjSense.kMaximize if self.sense is Sense.MAXIMIZE
                                           else highspy.ObjSense.kMinimize), "its objective sense")
        m = self._nrows
        if m:
            rows = np.concatenate(self._r_row)
            cols = np.concatenate(self._r_col)
            vals = np.concatenate(self._r_val)
            lo = np.concatenate(self._r_lo)
            up = np.concatenate(self._r_up)
            if cols.size and (cols.min() < 0 or cols.max() >= n):
                raise SolverError(f"model {self.name!r}: a constraint refers to an unknown variable")
            # sorted by row, then column; entries of one (row, column) are summed
            # (HiGHS refuses a row that names a column twice, e.g. `x + x <= 3`)
            key = rows * max(n, 1) + cols
            order = np.argsort(key)
            key, rows, cols, vals = key[order], rows[order], cols[order], vals[order]
            if key.size > 1 and (key[1:] == key[:-1]).any():
                first = np.concatenate([[True], key[1:] != key[:-1]])
                vals = np.add.reduceat(vals, np.flatnonzero(first))
                rows, cols = rows[first], cols[first]
            starts = np.searchsorted(rows, np.arange(m + 1)).astype(np.int64)
            lo = np.where(np.isinf(lo), -inf, lo)
            up = np.where(np.isinf(up), inf, up)
            for b in range(0, m, _ROW_BATCH):
                e = min(m, b + _ROW_BATCH)
                s0, s1 = starts[b], starts[e]
                self._check(h.addRows(e - b, lo[b:e], up[b:e], int(s1 - s0), (starts[b:e] - s0).astype(np.int32),
                                      cols[s0:s1].astype(np.int32), vals[s0:s1]), f"rows {b}..{e - 1}")
        if not relax and n:
            integ = np.concatenate(self._type)
            if integ.any():
                self._check(h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), integ), "its integrality")

    def _check(self, status: highspy.HighsStatus, what: str) -> None:
        """Every call that builds the HiGHS model is checked: HiGHS leaves out what
        it refuses (a NaN bound, a bad index) and would solve a different model."""
        if status == highspy.HighsStatus.kError:
            raise SolverError(f"model {self.name!r}: HiGHS refused {what}")

    def _highs(self, options: SolverOptions) -> highspy.Highs:
        h = new_highs()
        h.setOptionValue("output_flag", bool(options.log))
        if options.time_limit_s is not None:
            h.setOptionValue("time_limit", float(options.time_limit_s))
        if options.mip_rel_gap is not None:
            h.setOptionValue("mip_rel_gap", float(options.mip_rel_gap))
        if options.threads is not None:
            # HiGHS runs every solve of the process on one global scheduler, started by
            # the first solve; a different `threads` later ends the run in "Not Set".
            # An explicit count therefore restarts the scheduler (safe between solves,
            # not while another thread of this process is inside a HiGHS solve).
            highspy.Highs.resetGlobalScheduler(True)
            h.setOptionValue("threads", int(options.threads))
        h.setOptionValue("presolve", "on" if options.presolve else "off")
        if options.lp_method is not None:
            h.setOptionValue("solver", options.lp_method)
        if options.mip_heuristic_effort is not None:
            h.setOptionValue("mip_heuristic_effort", float(options.mip_heuristic_effort))
        if options.feasibility_tol is not None:
            h.setOptionValue("primal_feasibility_tolerance", float(options.feasibility_tol))
            h.setOptionValue("mip_feasibility_tolerance", float(options.feasibility_tol))
        return h

    def fix(self, cols: np.ndarray, values: np.ndarray) -> None:
        """Fix columns to values (both bounds) for the next solve."""
        self._fixed.append((np.asarray(cols, dtype=np.int64), np.asarray(values, dtype=float)))

    def solve(self, options: SolverOptions | None = None, relax: bool = False,
              start: np.ndarray | None = None) -> "Solution":
        """Solve (the LP relaxation if `relax`; `start`: a feasible point HiGHS
        may use as its first incumbent); raise InfeasibleError / SolverError
        when there is no answer."""
        options = options or SolverOptions()
        t0 = time.perf_counter()
        h = self._highs(options)
        self._build(h, relax=relax)
        if self._fixed:
            cols = np.concatenate([c for c, _ in self._fixed])
            vals = np.concatenate([v for _, v in self._fixed])
            self._check(h.changeColsBounds(len(cols), cols.astype(np.int32), vals, vals), "fixed column bounds")
        if start is not None and not relax:
            sol0 = highspy.HighsSolution()
            sol0.col_value = list(np.asarray(start, dtype=float))
            sol0.value_valid = True
            h.setSolution(sol0)
        build_s = time.perf_counter() - t0
        guard: dict[str, float] = {}
        mip_model = not relax and bool(self._type) and bool(np.concatenate(self._type).any())
        if mip_model and options.gap_guard and options.mip_rel_gap is not None:
            h.cbMipInterrupt.subscribe(_gap_guard(float(options.mip_rel_gap), guard))
        run = h.run()
        elapsed = time.perf_counter() - t0
        ms = h.getModelStatus()
        status = _STATUS_MAP.get(ms, Status.ERROR)
        if guard and status is Status.INTERRUPTED:  # stopped by the gap guard: proven within the gap
            status = Status.OPTIMAL
        if status is Status.INFEASIBLE or (status is Status.INFEASIBLE_OR_UNBOUNDED and self._is_bounded()):
            names = self._iis(options) if options.explain_infeasible else []
            where = f"; conflicting constraints: {', '.join(names)}" if names else ""
            raise InfeasibleError(f"model {self.name!r} is infeasible{where}", names)
        if status in (Status.UNBOUNDED, Status.INFEASIBLE_OR_UNBOUNDED):
            raise SolverError(f"model {self.name!r}: {h.modelStatusToString(ms)}", status)
        if status is Status.ERROR or run == highspy.HighsStatus.kError:
            raise SolverError(f"model {self.name!r}: HiGHS ended with {h.modelStatusToString(ms)}")
        info = h.getInfo()
        is_mip = mip_model
        has_sol = info.primal_solution_status == highspy.kSolutionStatusFeasible or status is Status.OPTIMAL
        x = np.asarray(h.getSolution().col_value, dtype=np.float64) if has_sol else np.full(self._ncols, np.nan)
        if status is Status.EMPTY:
            x = np.zeros(0)
            has_sol = True
            status = Status.OPTIMAL
        obj = float(info.objective_function_value) if has_sol else None
        duals = cduals = None
        if not is_mip and status is Status.OPTIMAL and info.dual_solution_status == highspy.kSolutionStatusFeasible:
            duals = np.asarray(h.getSolution().row_dual, dtype=np.float64)
            cduals = np.asarray(h.getSolution().col_dual, dtype=np.float64)
        if status is Status.OPTIMAL and self._ncols == 0:
            obj = self._obj.const
        if is_mip:
            bound = float(info.mip_dual_bound)
            if guard and status is Status.OPTIMAL and not math.isfinite(bound):
                bound = guard["dual"]
            gap = float(info.mip_gap) if has_sol else None
            if gap is not None and not math.isfinite(gap):
                gap = None
            if status is Status.OPTIMAL and gap is not None and obj is not None and abs(obj - bound) <= 1e-9 * max(1.0, abs(obj)):
                gap = 0.0
        else:
            bound = obj if status is Status.OPTIMAL else None
            gap = 0.0 if status is Status.OPTIMAL else None
        return Solution(status=status, objective=obj, bound=bound, gap=gap, solve_time_s=elapsed,
                        build_time_s=build_s, x=x, model=self, has_solution=has_sol, row_duals=duals,
                        col_duals=cduals, gap_guard_stop=bool(guard) and status is Status.OPTIMAL)

    def _is_bounded(self) -> bool:
        lb = np.concatenate(self._lb) if self._lb else np.zeros(0)
        ub = np.concatenate(self._ub) if self._ub else np.zeros(0)
        return bool(np.all(np.isfinite(lb)) and np.all(np.isfinite(ub)))

    def _iis(self, options: SolverOptions) -> list[str]:
        """Names of an IIS: HiGHS's IIS of the LP relaxation if that is already
        infeasible; else a deletion filter over rows (bounded to small models)."""
        try:
            h = self._highs(options)
            self._build(h, relax=True)
            h.run()
            if _STATUS_MAP.get(h.getModelStatus()) is Status.INFEASIBLE:
                st, iis = h.getIis()
                if st != highspy.HighsStatus.kError and iis.valid_ and len(iis.row_index_):
                    return [self.row_name(int(r)) for r in iis.row_index_]
        except Exception:  # pragma: no cover - IIS is best effort
            pass
        if self._nrows <= 200 and self._ncols <= 2000:
            return self._deletion_filter(options)
        return []

    def _deletion_filter(self, options: SolverOptions) -> list[str]:
        """Drop rows one at a time; keep a row only if the rest becomes feasible
        without it. What remains is an irreducible infeasible set of rows."""
        keep = np.ones(self._nrows, dtype=bool)
        rows = np.concatenate(self._r_row) if self._r_row else np.zeros(0, np.int64)
        lo_all = np.concatenate(self._r_lo) if self._r_lo else np.zeros(0)
        up_all = np.concatenate(self._r_up) if self._r_up else np.zeros(0)
        h = self._highs(SolverOptions(time_limit_s=options.time_limit_s, threads=options.threads, explain_infeasible=False))
        self._build(h)
        inf = h.getInfinity()
        del rows
        for r in range(self._nrows):
            h.changeRowBounds(r, -inf, inf)
            h.run()
            st = _STATUS_MAP.get(h.getModelStatus(), Status.ERROR)
            if st is Status.INFEASIBLE:
                keep[r] = False  # still infeasible without it: not needed
            else:
                lo, up = lo_all[r], up_all[r]
                h.changeRowBounds(r, -inf if math.isinf(lo) else lo, inf if math.isinf(up) else up)
        return [self.row_name(r) for r in np.flatnonzero(keep)]


def _gap_guard(rel_gap: float, hit: dict[str, float]):
    """A MIP-interrupt callback: interrupt once incumbent − dual bound ≤
    rel_gap·max(1, |incumbent|) (minimisation; HiGHS reports both bounds in
    the model's sense, so the test uses their absolute difference); `hit`
    records the bounds it stopped at."""
    def check(e) -> None:
        out = e.data_out
        primal, dual = float(out.mip_primal_bound), float(out.mip_dual_bound)
        if not (math.isfinite(primal) and math.isfinite(dual)) or abs(primal) >= 1e30 or abs(dual) >= 1e30:
            return
        if abs(primal - dual) <= rel_gap * max(1.0, abs(primal)):
            hit["primal"], hit["dual"] = primal, dual
            e.interrupt()
    return check


# ------------------------------------------------------------------- solution

@dataclass
class Solution:
    status: Status
    objective: float | None
    bound: float | None
    gap: float | None
    solve_time_s: float
    build_time_s: float
    x: np.ndarray
    model: Model = field(repr=False)
    has_solution: bool = True
    row_duals: np.ndarray | None = field(default=None, repr=False)  # LPs only (HiGHS sign convention)
    col_duals: np.ndarray | None = field(default=None, repr=False)  # LPs only: reduced costs
    gap_guard_stop: bool = False  # a MIP proven within mip_rel_gap and stopped by the gap guard (see SolverOptions)

    @property
    def optimal(self) -> bool:
        return self.status is Status.OPTIMAL

    def value(self, v: Var | LinExpr | Hashable) -> float:
        """Value of a Var, an expression, or the variable with that key."""
        if isinstance(v, Var):
            return float(self.x[v.index])
        if isinstance(v, LinExpr):
            return v.value(self.x)
        return float(self.x[self.model.var(v).index])

    def __getitem__(self, key: Hashable) -> float:
        return self.value(key)

    def values(self, block: VarBlock) -> np.ndarray:
        return self.x[block.indices]

    def values_by_key(self) -> Mapping[Hashable, float]:
        return {k: float(self.x[i]) for i, k in enumerate(self.model._keys)}
