"""Screenshots of the admin page for docs/screenshots/, taken in headless chromium by this script.

    .venv/bin/python scripts/screenshots.py                      # starts a fresh stack, then stops it
    .venv/bin/python scripts/screenshots.py --url http://127.0.0.1:8787 --admin-key "$KEY"   # a running one

Opens the sign-in screen, signs in with the admin key, makes a demo tenant (a group) with a few short
runbooks uploaded through the page, waits until they are ready, searches with a misspelled word (to
show a correction and the routing), and saves signin.png, search.png and telemetry.png at
1200x800. Prints where each went.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from edgeindex.admin.browser import AdminPage, chromium

ROOT = Path(__file__).resolve().parents[1]
SIZE = (1200, 800)

RUNBOOKS = {
    "runbooks/oncall.md": ("On-call rotation", "# On-call rotation\n\nThe on-call engineer hands over every Monday "
                           "at 10:00. The pager escalates to the secondary after 10 minutes without an "
                           "acknowledgement, and to the team lead after 30."),
    "runbooks/postgres-autovacuum.md": ("Autovacuum tuning", "# Autovacuum tuning\n\nWhen a table's dead tuples "
                                        "grow faster than autovacuum removes them, lower "
                                        "autovacuum_vacuum_scale_factor for that table and raise "
                                        "autovacuum_max_workers. Watch pg_stat_user_tables.n_dead_tup."),
    "runbooks/certificates.md": ("Certificate renewal", "# Certificate renewal\n\nCertificates renew 30 days "
                                 "before expiry. If renewal fails, the alert names the domain; run the renewal "
                                 "job by hand and check the DNS challenge record."),
}


@contextlib.contextmanager
def upload_worker(url: str | None, admin_key: str | None) -> Iterator[tuple[str, str]]:
    """(upload worker's URL, admin key): the running stack named, or a fresh one for the run's length."""
    if url:
        if not admin_key:
            raise SystemExit("--url needs --admin-key (or $EDGEINDEX_ADMIN_KEY)")
        yield url, admin_key
        return
    from edgeindex.evaluation.stack import fresh_stack

    with fresh_stack(ROOT / "wrangler.toml", progress=print) as endpoints:
        yield endpoints.upload_url, endpoints.admin_key


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("EDGEINDEX_UPLOAD_URL"),
                        help="the upload worker of a running stack (default: start a fresh stack)")
    parser.add_argument("--admin-key", default=os.environ.get("EDGEINDEX_ADMIN_KEY"),
                        help="that stack's admin key (default: $EDGEINDEX_ADMIN_KEY)")
    parser.add_argument("--entity", default="team-ops", help="the demo tenant to create (or reuse)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args(argv)

    with upload_worker(args.url, args.admin_key) as (url, key), chromium(width=SIZE[0], height=SIZE[1]) as browser:
        page = AdminPage(browser, url)
        page.open()
        page.screenshot(args.out / "signin.png", whole_page=False)
        page.sign_in(key)
        page.signed_in()
        if page.tenant_row(args.entity) is None:
            page.create_tenant(args.entity, kind="group", name="Operations team")
        for document_id, (title, text) in RUNBOOKS.items():
            page.upload_text(args.entity, document_id, text, title=title, content_type="text/markdown")
        page.documents(args.entity)
        for document_id in RUNBOOKS:
            page.wait_document(document_id, "ready")

        for query in ("certificate renewal failed", "autovacuum_max_workers", "who hands over on monday"):
            page.search(query, entity_ids=[args.entity], k=3)  # a little telemetry to show
        page.search("when does the pager escalate to the secondry", entity_ids=[args.entity], k=3)
        browser.execute_script("document.getElementById('search-extra').open = true;"
                               "document.getElementById('screen-search').scrollIntoView()")
        page.screenshot(args.out / "search.png", whole_page=False)

        page.telemetry()
        page.screenshot(args.out / "telemetry.png", whole_page=False)
    for name in ("signin", "search", "telemetry"):
        print(args.out / f"{name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
