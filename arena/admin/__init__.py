from arena.admin import (  # noqa: F401  (importing a module registers its ModelAdmins)
    audit,
    cohorts,
    decisions,
    events,
    lineup,
    markets,
    outside,
    releases,
)
