"""Racy entries: a file whose recorded mtime is not clearly older than the moment it was checked.

Change detection compares size and mtime. A file edited in the same timestamp tick as the stat that
recorded it, keeping its size, looks unchanged for ever after (git's "racily clean" entries). So,
as git does, an entry whose mtime is not clearly older than its check gets a content check (its
digest) at the next refresh; a refresh that finds it unchanged records a later check time, after
which the entry is clean.
"""
from __future__ import annotations

# How far a file's timestamp may trail the clock we read: the kernel stamps files from a coarse
# clock (one tick, a few ms, behind); filesystems with whole-second stamps (FAT: two seconds) trail
# by up to their granularity.
FINE_MARGIN_NS = 50_000_000
COARSE_MARGIN_NS = 2_000_000_000


def margin(mtime_ns: int) -> int:
    return COARSE_MARGIN_NS if mtime_ns % 1_000_000_000 == 0 else FINE_MARGIN_NS


def racy(mtime_ns: int, checked_ns: int | None, now_ns: int) -> bool:
    """True when an edit after the check could have left mtime unchanged and may already have
    happened. checked_ns: when the entry's stat was taken (None: unknown, old manifests)."""
    if checked_ns is None:
        return False
    m = margin(mtime_ns)
    # Clearly older than the check: a later edit would show a later mtime. A stamp still in the
    # future (a clock ahead, a touch -d): an edit cannot have reached it yet.
    return mtime_ns >= checked_ns - m and now_ns >= mtime_ns - m


SETTLE_MAX_FILES = 64  # more racy files than this (a build right after a checkout): leave them racy


def settle(racy_digests: dict, checked_ns: int, digest_now) -> int:
    """The check time to record for a refresh whose entries include racy ones.

    racy_digests: {path: (mtime_ns, digest as indexed)} of the racy entries; digest_now(path): the
    file's digest as read now (None when unreadable). For a few recently edited files (an editor's
    save just before a query) waiting out the tick is cheaper than a content check at every later
    command: wait until the clock is past their stamps, read them again, and when every one still
    has the digest indexed, return the present as the check time (nothing is racy against it).
    Otherwise return checked_ns unchanged (the next refresh checks them).
    """
    if not racy_digests or len(racy_digests) > SETTLE_MAX_FILES:
        return checked_ns
    latest = max(m for m, _ in racy_digests.values())
    if any(margin(m) != FINE_MARGIN_NS for m, _ in racy_digests.values()):
        return checked_ns  # whole-second stamps: the wait would be seconds
    import time

    wait = (latest + FINE_MARGIN_NS - time.time_ns()) / 1e9
    if wait > 2 * FINE_MARGIN_NS / 1e9:
        return checked_ns  # a stamp in the future
    if wait > 0:
        time.sleep(wait)
    now = time.time_ns()
    for path, (_mtime, digest) in racy_digests.items():
        if digest is None or digest_now(path) != digest:
            return checked_ns
    return now
