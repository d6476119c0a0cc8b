// The endpoint form: the Options box's example follows the type chosen. Without this
// script the example of the type the page was drawn with shows, and every type's options
// and example are listed under the box.
"use strict";

document.addEventListener("change", (event) => {
  const select = event.target.closest("select[data-options-example]");
  if (!select) return;
  const box = document.getElementById(select.dataset.optionsExample);
  const section = document.querySelector(`section[data-type="${select.value}"]`);
  if (box && section) box.placeholder = section.dataset.example;
});
