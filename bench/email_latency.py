"""Email answer latency: from a reply landing in the mailbox (IMAP APPEND) to `ask()` returning.

Runs a real Dovecot on loopback (as root; `apt-get install dovecot-imapd` if missing), the email channel watching it
with IMAP IDLE, and asks 100 questions one after another. Each reply is appended over IMAP. Dovecot's own
notification delay is measured in the same run: the watcher notes when Dovecot's IDLE push arrives, which splits
end to end into Dovecot's notification delay (APPEND done → push) and handraise's part (push → fetch, read, parse,
record → `ask()` returns).

    uv run python bench/email_latency.py [--replies 100]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.email.live import append, live
from tests.email.rig import reply_to
from tests.email.samples import DATABASE
from tests.email.servers import Dovecot, SmtpToDovecot, need_dovecot


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def run(count: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="handraise-bench-"))
    dovecot = Dovecot(need_dovecot(), root / "dovecot")
    dovecot.start()
    smtp = SmtpToDovecot(dovecot)
    smtp.start()
    end_to_end: list[float] = []
    notify: list[float] = []
    try:
        async with live(root, dovecot, smtp, 1, confirmations=False) as rig:
            watcher = rig.channel.watcher
            assert watcher is not None
            for index in range(count):
                asked = rig.ask(DATABASE)
                question = (await rig.question_mails(index + 1))[-1]
                raw = reply_to(question, "2", sender=rig.alice)
                await append(dovecot, rig.bot, raw)
                landed = time.perf_counter()
                await asked.answer()
                returned = time.perf_counter()
                pushed = watcher.pushed_at
                assert pushed is not None and pushed >= landed, "the answer came without an IDLE push"
                end_to_end.append(returned - landed)
                notify.append(pushed - landed)
    finally:
        smtp.stop()
        dovecot.remove()
    ours = [total - wait for total, wait in zip(end_to_end, notify, strict=True)]  # push received → ask() returned
    print(f"{count} replies, IMAP APPEND → ask() returned (ms):")
    for name, values in (("end to end", end_to_end), ("Dovecot IDLE notification", notify), ("handraise's part", ours)):
        p50, p95 = percentile(values, 0.5) * 1000, percentile(values, 0.95) * 1000
        print(f"  {name:<27} p50 {p50:7.1f}  p95 {p95:7.1f}  mean {statistics.fmean(values) * 1000:7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description="email answer latency against a local Dovecot")
    parser.add_argument("--replies", type=int, default=100)
    anyio.run(run, parser.parse_args().replies)


if __name__ == "__main__":
    main()
