"""The web console's data: lag history, ISR events and traffic rates, kept in bounded rings.

Everything the console draws can be read from the API (docs/console.md); this package adds
history, no logic. The decisions are pure (``lag_history``, ``isr_events``,
``activity``, ``health``: no I/O, no asyncio, no clock — time enters as ``now_ms``);
``sampling`` is the thin asyncio driver that feeds them on timers, so one sample is
shared by every viewer and a request never triggers sampling work.
"""
