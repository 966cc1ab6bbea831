"""Claims: reading a chapter's claims file, checking each claim, the statuses, the verdicts per paper, the papers' tables."""
