PER_ITEM: int
MAX_PAD: int
DEFAULT_PAD: int
MMAP_THRESHOLD: int
ENABLED: bool

def keep_for(n_items: int) -> int: ...
def _user_chose() -> bool: ...
