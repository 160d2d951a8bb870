"""What each analysis page computes by default, importable: its tab labels, the cached reads
its tabs share, and ``default_views``, the views a first visit of each tab computes under the
default choices. The page (``pages/<name>.py``) imports them to draw; the start-up warm-up
(:mod:`ui.warm`) imports them to compute the same views first, so both use the very same
cached functions and arguments, hence the same cache keys."""
