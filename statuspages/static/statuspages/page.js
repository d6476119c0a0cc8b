// Shows every <time datetime> of a status page in the reader's own time zone; without
// scripts the page reads in UTC, as its text says.
"use strict";

const format = new Intl.DateTimeFormat(undefined, {
  year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
  timeZoneName: "short",
});

for (const node of document.querySelectorAll("time[datetime]")) {
  const moment = new Date(node.getAttribute("datetime"));
  if (!Number.isNaN(moment.getTime())) {
    node.title = node.textContent;
    node.textContent = format.format(moment);
  }
}

const zone = document.querySelector(".js-zone");
if (zone) {
  zone.textContent = "your time zone (" + Intl.DateTimeFormat().resolvedOptions().timeZone + ")";
}
