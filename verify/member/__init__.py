"""One member loaded on the GPU: its arguments packed (``args``), its buffers fenced by guard pages (``fence``), and
the loaded row that runs a trial (``row``)."""
