"""The page table: every page (home, operation, implementation, run, records, GPU, challenges,
compare, search) described once — its parameters, the read-model builder it calls, its template and
its cache key. The HTML route, the ``/api/v1`` route and the CLI's local and remote reads all come
from these descriptions, so a page and its JSON twin cannot disagree (docs/design.md §6)."""
