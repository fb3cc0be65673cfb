# simcrawl image: `docker compose up` builds it and crawls $START_URLS; the console
# service runs `simcrawl web` from the same image.
FROM python:3.11-slim

RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential libxxhash-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml setup.py README.md ./
COPY dedup ./dedup
COPY crawler ./crawler
# Installed into site-packages; the source folders go, so that imports find the build.
RUN pip install --no-cache-dir . \
 && rm -rf dedup crawler build \
 && python -c "import dedup, dedup.pinyin as p, dedup.maintext as m, sys; sys.exit('python' in (dedup.KERNEL, p.KERNEL, m.KERNEL))"

RUN useradd --create-home --uid 10001 crawler
USER crawler

# REDIS_URL, MONGO_URI and START_URLS come from the environment (docker-compose.yml).
# The settings module inside the installed package (no scrapy.cfg needed).
ENV PYTHONUNBUFFERED=1 SCRAPY_SETTINGS_MODULE=crawler.settings
# The frontier lives in Redis (SIMCRAWL_FRONTIER=redis from docker-compose.yml): any number
# of these containers share one crawl, and a stopped crawl resumes from Redis.
CMD ["scrapy", "crawl", "site"]
