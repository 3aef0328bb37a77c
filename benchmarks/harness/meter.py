"""CPU seconds and resident memory of processes, read from /proc (Linux only)."""

from __future__ import annotations

import os


def child_pids(pid: int) -> list[int]:
    """Processes whose parent is `pid` (nginx's workers), from /proc/*/stat."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                out.append(int(entry))
    return out


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in KiB, from /proc/PID/status; HWM is the peak RSS so far."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(rest.split()[0])  # the kernel writes "NNN kB", meaning KiB
    return fields["VmRSS"], fields["VmHWM"]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (/proc/PID/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        after_name = f.read().rsplit(")", 1)[1].split()
    return (int(after_name[11]) + int(after_name[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> float:
    """CPU seconds all cores have spent busy since boot (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


class Meter:
    """CPU seconds and resident memory of a fixed set of processes, sampled from /proc.

    A process that has gone (a killed replica) keeps the figures of its last sample; a zombie
    has no VmRSS and counts as gone."""

    def __init__(self, processes: list[tuple[int, str]]) -> None:
        self.labels = dict(processes)
        self.cpu0: dict[int, float] = {}
        self.last: dict[int, tuple[float, int, int]] = {}  # pid -> (CPU s, VmRSS KiB, VmHWM KiB)
        self.totals_kib: list[int] = []  # summed VmRSS of the live processes, per sample

    def sample(self) -> None:
        total = 0
        for pid in self.labels:
            try:
                cpu, (rss, hwm) = cpu_seconds(pid), rss_kib(pid)
            except (OSError, KeyError, IndexError, ValueError):
                cpu, _, hwm = self.last.get(pid, (0.0, 0, 0))
                self.last[pid] = (cpu, 0, hwm)  # gone: no resident memory; CPU and peak as last seen
                continue
            self.cpu0.setdefault(pid, cpu)
            self.last[pid] = (cpu, rss, hwm)
            total += rss
        self.totals_kib.append(total)

    def cpu_s(self, label: str | None = None) -> float:
        return sum(
            self.last[p][0] - self.cpu0[p] for p in self.cpu0 if label is None or self.labels[p] == label
        )

    def rss_now_kib(self, label: str | None = None) -> int:
        return sum(v[1] for p, v in self.last.items() if label is None or self.labels[p] == label)

    def peak_kib(self) -> int:
        """Sum of every process's own peak (VmHWM): an upper bound of the total's peak, and for one
        process exactly its peak; never below the highest sampled total."""
        return max([sum(v[2] for v in self.last.values()), *self.totals_kib])

    def per_label(self) -> dict[str, tuple[float, int]]:
        """label -> (CPU seconds, VmRSS KiB now), in first-seen order."""
        return {lab: (self.cpu_s(lab), self.rss_now_kib(lab)) for lab in dict.fromkeys(self.labels.values())}
