// Small enhancements; every page works without them.
// - [data-copy]: copies the text of the element it names to the clipboard; such a button
//   drawn `hidden` (the text is selectable without it) shows where copying works.
// - form[data-confirm]: asks before submitting (pause, delete, revoke, remove).
"use strict";

document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  if (!source || !navigator.clipboard) return;
  navigator.clipboard.writeText(source.textContent.trim()).then(() => {
    const label = button.textContent;
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = label; }, 2000);
  });
});

for (const button of document.querySelectorAll("[data-copy][hidden]")) {
  if (navigator.clipboard) button.hidden = false;
}

document.addEventListener("submit", (event) => {
  const form = event.target.closest("form[data-confirm]");
  if (form && !window.confirm(form.dataset.confirm)) event.preventDefault();
});
