"""Screenshots of every screen of the admin page, taken in headless chromium against a running stack.

    .venv/bin/edgeindex dev &                       # or any deployment: --url and --admin-key
    .venv/bin/python scripts/admin_screenshots.py --out admin-screenshots

Signs in with the admin key, makes a demo tenant (a group) with a key, uploads a few short runbooks
through the page (and a broken PDF, to show a failure reason and its retry), waits until they are
ready, searches with a misspelled word (to show a correction), and saves tenants.png, upload.png,
documents.png, search.png, telemetry.png and signin.png. Prints where each went.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from edgeindex.admin.browser import AdminPage, chromium

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("EDGEINDEX_UPLOAD_URL", "http://127.0.0.1:8787"),
                        help="the upload worker (default: the dev port)")
    parser.add_argument("--admin-key", default=os.environ.get("EDGEINDEX_ADMIN_KEY"),
                        help="default: $EDGEINDEX_ADMIN_KEY, else .edgeindex/admin_key")
    parser.add_argument("--entity", default="team-ops", help="the demo tenant to create (or reuse)")
    parser.add_argument("--out", type=Path, default=Path("admin-screenshots"))
    args = parser.parse_args(argv)
    key = args.admin_key or Path(".edgeindex/admin_key").read_text().strip()

    with chromium(width=1360, height=900) as browser:
        page = AdminPage(browser, args.url)
        page.open()
        page.screenshot(args.out / "signin.png")
        page.sign_in(key)
        page.signed_in()
        if page.tenant_row(args.entity) is None:
            page.create_tenant(args.entity, kind="group", name="Operations team")
        page.create_key("ops-agent", [args.entity])
        page.screenshot(args.out / "tenants.png")

        for document_id, (title, text) in RUNBOOKS.items():
            page.upload_text(args.entity, document_id, text, title=title, content_type="text/markdown")
        page.upload_text(args.entity, "scans/invoice-0042.pdf", "not really a PDF", title="Scanned invoice",
                         content_type="application/pdf")
        page.screenshot(args.out / "upload.png")

        page.documents(args.entity)
        for document_id in RUNBOOKS:
            page.wait_document(document_id, "ready")
        page.wait_document("scans/invoice-0042.pdf", "failed")
        page.screenshot(args.out / "documents.png")

        page.search("when does the pager escalate to the secondry", entity_ids=[args.entity], k=5)
        page.screenshot(args.out / "search.png")

        page.telemetry()
        page.screenshot(args.out / "telemetry.png")
    for name in ("signin", "tenants", "upload", "documents", "search", "telemetry"):
        print(args.out / f"{name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
