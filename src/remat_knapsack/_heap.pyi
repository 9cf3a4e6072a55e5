PER_ITEM: int
MAX_PAD: int
DEFAULT_PAD: int
ENABLED: bool

def keep_for(n_items: int) -> int: ...
