"""What every method shares and nothing paper-specific."""
