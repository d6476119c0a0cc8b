// The endpoint form: the Options box's example follows the type chosen, and a heartbeat's
// next five expected times follow the schedule being typed. Without this script the example
// of the type the page was drawn with shows, every type's options and example are listed
// under the box, and a saved heartbeat's next times are drawn by the server.
"use strict";

document.addEventListener("change", (event) => {
  const select = event.target.closest("select[data-options-example]");
  if (!select) return;
  const box = document.getElementById(select.dataset.optionsExample);
  const section = document.querySelector(`section[data-type="${select.value}"]`);
  if (box && section) box.placeholder = section.dataset.example;
});

(() => {
  const panel = document.getElementById("schedule-preview");
  const type = document.getElementById("type");
  const interval = document.getElementById("interval_seconds");
  const config = document.getElementById("config");
  if (!panel || !type || !interval || !config) return;
  const list = document.getElementById("schedule-times");
  const description = document.getElementById("schedule-description");
  const errors = document.getElementById("schedule-errors");
  let asked = 0;
  let timer = null;

  // The cron and zone typed in the Options box; null while it is not JSON yet. A blank box
  // keeps the current options on an edit, whose schedule the page was drawn with.
  const typed = () => {
    const text = config.value.trim();
    if (!text) return { cron: "", timezone: "" };
    try {
      const options = JSON.parse(text);
      if (options === null || typeof options !== "object") return null;
      return { cron: String(options.cron || ""), timezone: String(options.timezone || "") };
    } catch {
      return null;
    }
  };

  const show = (times, text, problems) => {
    list.replaceChildren(...times.map(([iso, shown]) => {
      const item = document.createElement("li");
      const time = document.createElement("time");
      time.dateTime = iso;
      time.textContent = shown;
      item.append(time);
      return item;
    }));
    description.textContent = text;
    errors.textContent = problems;
    errors.hidden = !problems;
  };

  const ask = async () => {
    const schedule = typed();
    if (schedule === null) {
      show([], "The options are not valid JSON yet.", "");
      return;
    }
    const query = new URLSearchParams({ interval_seconds: interval.value, ...schedule });
    const mine = ++asked;
    try {
      const response = await fetch(`${panel.dataset.url}?${query}`, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      const body = await response.json();
      if (mine !== asked) return; // a later question is on its way
      if (response.ok) {
        const pairs = body.times.map((iso, at) => [iso, body.shown[at]]);
        show(pairs, `As typed: ${body.description}, counted from now.`, "");
      } else {
        const problems = Object.entries(body.errors || {}).map(
          ([field, messages]) => `${field}: ${messages.join(" ")}`,
        );
        show([], "No times for this schedule.", problems.join(" ") || body.detail);
      }
    } catch {
      if (mine === asked) show([], "The times could not be fetched.", "");
    }
  };

  const later = () => {
    panel.hidden = type.value !== "heartbeat";
    if (panel.hidden) return;
    clearTimeout(timer);
    timer = setTimeout(ask, 250);
  };
  interval.addEventListener("input", later);
  config.addEventListener("input", later);
  type.addEventListener("change", later);
  if (!panel.hidden && !list.children.length) later();
})();
