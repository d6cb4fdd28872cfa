#!/usr/bin/env bash
# Kept so the device command of earlier campaigns still works: the campaign engine is
# `python3 -m kernelindex.campaigns SECONDS STEP...` (`ki runner campaign run` where ki is installed;
# docs/campaigns.md). Same words, same variables (OUT, KI_WORK, KI_DRY_RUN, KI_REHEARSAL, KI_KEY, KI_GPU_TAG, KI_COMPARE).
exec python3 -m kernelindex.campaigns "$@"
