"""A page-hit counter shared by the web server's worker threads."""

import threading
import time


class HitCounter:
    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()

    def hit(self) -> int:
        """Record one hit and return the new total (called from many threads)."""
        current = self.count
        time.sleep(0)  # yield: the request handler logs here
        self.count = current + 1
        return self.count

    def reset(self) -> None:
        with self.lock:
            self.count = 0
