"""``[models.comex]`` of ``disaggsim emulate``: the comex paging policy's parameters.

The policy is ``swapdev/src/policy_comex.c`` (COMEX, paper 002; doc/swapdev.md "comex");
each parameter here sets one of its ``SWAPDEV_COMEX_*`` variables, unset ones keep the
policy's defaults (P = 16, B = 4096, 64-page write batches, T_S = 6 µs, M = 12).
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: The paging policy these parameters configure (a name of ``src/policies.def``).
POLICY: Final = "comex"
NonNegInt = Annotated[int, Field(ge=0)]


def as_list(value: object) -> object:
    """A value as a one-element list; a list as it is (a grid or its single value)."""
    return value if isinstance(value, list) else [value]


def check_grid(values: list[Any], what: str) -> list[Any]:
    """``values`` if it is a non-empty grid of distinct values; else ValueError naming
    ``what``."""
    if not values:
        raise ValueError(f"{what}: expected a value or a non-empty list")
    if len(set(values)) != len(values):
        raise ValueError(f"{what}: repeated values in the grid {values}")
    return values


class ComexSection(BaseModel):
    """``[models.comex]``: the comex policy's parameters (``src/policy_comex.c``; unset:
    its defaults, COMEX's P = 16, B = 4096, 64, 6 µs, 12); ``prefetch_pages`` and
    ``read_buffer_pages`` may be lists (their product: the P x B sweep of Figs. 11-12)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    prefetch_pages: list[Annotated[int, Field(ge=1, le=64)]] | None = None
    read_buffer_pages: list[Annotated[int, Field(ge=1)]] | None = None
    write_batch_pages: int | None = Field(None, ge=1)
    service_ns: NonNegInt | None = None
    memory_nodes: int | None = Field(None, ge=1, le=65536)

    _grid = field_validator("prefetch_pages", "read_buffer_pages", mode="before")(as_list)

    @field_validator("prefetch_pages", "read_buffer_pages")
    @classmethod
    def _values(cls, v: list[int] | None) -> list[int] | None:
        return None if v is None else check_grid(v, "grid")

    def points(self) -> list[tuple[str, dict[str, str]]]:
        """(label suffix, ``SWAPDEV_COMEX_*`` environment) per (P, B) of the grid."""
        fixed = {
            f"SWAPDEV_COMEX_{key}": str(value)
            for key, value in (
                ("WRITE_BATCH_PAGES", self.write_batch_pages),
                ("SERVICE_NS", self.service_ns),
                ("MEMORY_NODES", self.memory_nodes),
            )
            if value is not None
        }
        out = []
        unset: list[int | None] = [None]
        for p in [*self.prefetch_pages] if self.prefetch_pages else unset:
            for b in [*self.read_buffer_pages] if self.read_buffer_pages else unset:
                env = dict(fixed)
                suffix = ""
                if p is not None:
                    env["SWAPDEV_COMEX_PREFETCH_PAGES"] = str(p)
                    suffix += f"-P{p}"
                if b is not None:
                    env["SWAPDEV_COMEX_READ_BUFFER_PAGES"] = str(b)
                    suffix += f"-B{b}"
                out.append((suffix, env))
        return out
