"""simcrawl's Scrapy commands (``COMMANDS_MODULE``): ``crawl`` with exit codes that say
whether the record is complete."""
