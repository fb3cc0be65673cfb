"""simcrawl's spiders."""
