"""The verification runner (``ki verify``): measures implementations on the local GPU.

Most modules import torch (the ``runner`` extra); ``stats``, ``timing`` and ``report`` do not.
The web app and the catalog never import this package.
"""
