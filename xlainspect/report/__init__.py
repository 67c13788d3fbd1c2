"""Writers of what the analyses found: tables (`table`) and self-contained HTML pages."""
