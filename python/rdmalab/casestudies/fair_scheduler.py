"""SCR §5.1 and §6.2: the default RNIC QP scheduler against fair policies."""

from __future__ import annotations
