"""Status page writes: pages (`pages`) and subscribers (`subscribers`). Import from the
package."""

from statuspages.services.pages import status_page_create as status_page_create
from statuspages.services.pages import status_page_delete as status_page_delete
from statuspages.services.pages import status_page_update as status_page_update

# subscribers: double opt-in, one-click unsubscribe, update mails (statuspages.services.subscribers)
from statuspages.services.subscribers import subscriber_confirm as subscriber_confirm
from statuspages.services.subscribers import subscriber_mails_fan_out as subscriber_mails_fan_out
from statuspages.services.subscribers import subscriber_mails_send as subscriber_mails_send
from statuspages.services.subscribers import subscriber_subscribe as subscriber_subscribe
from statuspages.services.subscribers import subscriber_unsubscribe as subscriber_unsubscribe
