# subscribers: double opt-in, one-click unsubscribe, update mails (statuspages.services.subscribers)
from statuspages.services.subscribers import subscriber_confirm as subscriber_confirm
from statuspages.services.subscribers import subscriber_mails_fan_out as subscriber_mails_fan_out
from statuspages.services.subscribers import subscriber_mails_send as subscriber_mails_send
from statuspages.services.subscribers import subscriber_subscribe as subscriber_subscribe
from statuspages.services.subscribers import subscriber_unsubscribe as subscriber_unsubscribe
