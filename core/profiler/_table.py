"""PyTorch's profiler text table (``EventList.table``): the same columns, units and totals line."""

from __future__ import annotations

import math

from ._types import device_label

__all__ = ["build_table", "format_time", "format_memory"]


def format_time(us: float) -> str:
    """Microseconds as PyTorch prints them: ``s``, ``ms`` or ``us`` with three decimals."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def format_memory(nbytes: int) -> str:
    """Bytes as PyTorch prints them: ``Gb``, ``Mb``, ``Kb`` with two decimals, else ``b``."""
    for unit, size in (("Gb", 1024 ** 3), ("Mb", 1024 ** 2), ("Kb", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} b"


def _percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:.2f}%" if whole > 0 else "0.00%"


def _flops_scale(events) -> tuple:
    units = ("FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs")
    most = max(e.flops for e in events)
    power = max(0, min(int(math.log10(most) / 3), len(units) - 1)) if most > 0 else 0
    return f"Total {units[power]}", 10 ** (-3 * power)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def build_table(events, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
                max_shapes_column_width=80, header=None, top_level_events_only=False, with_shapes=False,
                with_stack=False) -> str:
    """The text table of ``events`` (events or averages)."""
    if not events:
        return ""
    rows = list(events)
    if sort_by is not None:
        rows.sort(key=lambda e: getattr(e, sort_by.replace("cuda", "device")), reverse=True)
    if top_level_events_only:
        rows = [e for e in rows if e.cpu_parent is None]
    if row_limit > 0:
        rows = rows[:row_limit]
    self_cpu_total = sum(e.self_cpu_time_total for e in events)
    device_total = sum(e.self_device_time_total for e in events)
    device_names = sorted({device_label(e.device_type) for e in events if e.device_time_total})
    device = device_names[0] if len(device_names) == 1 else "DEVICE"
    has_device = device_total > 0
    has_cpu_mem = any(e.cpu_memory_usage or e.self_cpu_memory_usage for e in events)
    has_device_mem = any(e.device_memory_usage or e.self_device_memory_usage for e in events)
    has_flops = any(e.flops for e in events)

    columns = [("Name", lambda e: _clip(e.key, max_name_column_width)),
               ("Self CPU %", lambda e: _percent(e.self_cpu_time_total, self_cpu_total)),
               ("Self CPU", lambda e: format_time(e.self_cpu_time_total)),
               ("CPU total %", lambda e: _percent(e.cpu_time_total, self_cpu_total)),
               ("CPU total", lambda e: format_time(e.cpu_time_total)),
               ("CPU time avg", lambda e: format_time(e.cpu_time))]
    if has_device:
        columns += [(f"Self {device}", lambda e: format_time(e.self_device_time_total)),
                    (f"Self {device} %", lambda e: _percent(e.self_device_time_total, device_total)),
                    (f"{device} total", lambda e: format_time(e.device_time_total)),
                    (f"{device} time avg", lambda e: format_time(e.device_time))]
    if has_cpu_mem:
        columns += [("CPU Mem", lambda e: format_memory(e.cpu_memory_usage)),
                    ("Self CPU Mem", lambda e: format_memory(e.self_cpu_memory_usage))]
    if has_device_mem:
        columns += [(f"{device if has_device else 'Device'} Mem", lambda e: format_memory(e.device_memory_usage)),
                    (f"Self {device if has_device else 'Device'} Mem",
                     lambda e: format_memory(e.self_device_memory_usage))]
    columns.append(("# of Calls", lambda e: str(e.count)))
    if with_shapes:
        columns.append(("Input Shapes", lambda e: _clip(str(e.input_shapes), max_shapes_column_width)))
    if with_stack:
        columns.append(("Source Location", lambda e: _clip(e.stack[0], max_src_column_width) if e.stack else ""))
    if has_flops:
        title, scale = _flops_scale(events)
        columns.append((title, lambda e: f"{e.flops * scale:8.3f}" if e.flops > 0 else "--"))

    cells = [[fn(e) for _, fn in columns] for e in rows]
    widths = [max(len(title), *(len(row[i]) for row in cells)) if cells else len(title)
              for i, (title, _) in enumerate(columns)]
    left = {"Name", "Input Shapes", "Source Location"}

    def line(values) -> str:
        return "  ".join(v.ljust(w) if title in left else v.rjust(w)
                         for v, w, (title, _) in zip(values, widths, columns)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    out = [header] if header else []
    out += [rule, line([title for title, _ in columns]), rule]
    for event, row in zip(rows, cells):
        out.append(line(row))
        if with_stack:  # the further frames of a grouped stack, one per line under the row
            source = [title for title, _ in columns].index("Source Location")
            for frame in event.stack[1:]:
                out.append(line([_clip(frame, max_src_column_width) if i == source else ""
                                 for i in range(len(columns))]))
    out.append(rule)
    out.append(f"Self CPU time total: {format_time(self_cpu_total)}")
    if has_device:
        out.append(f"Self {device} time total: {format_time(device_total)}")
    return "\n".join(out) + "\n"
