"""The fault-injection suite: real kills, real full and read-only disks, torn files, stale
locks and clock steps, each checked to end without an accept caused by the fault, without a
lost or half-written verdict, with a one-line error naming the path, and with the service
going on where it can (docs/reliability.md)."""
