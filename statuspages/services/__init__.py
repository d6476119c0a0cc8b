"""Status page writes. Import from the package."""

from statuspages.services.pages import status_page_create, status_page_delete, status_page_update

__all__ = ["status_page_create", "status_page_delete", "status_page_update"]
