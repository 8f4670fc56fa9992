// groove dashboard: live parts of a page follow server-sent events; nothing else runs here.
// An element with data-live="TOPIC" has its contents replaced by each `fragment` event of /events/TOPIC
// (HTML the server rendered and escaped). A `down` event (the coordinator is not answering) or a lost
// connection to the dashboard shows the banner; the next fragment hides it again. While the person is in a
// field or on a button of a live part (typing a nudge, setting a priority), its update waits until they leave
// that part, so nothing they are doing is replaced under them.
"use strict";
(function () {
  const banner = document.getElementById("banner");
  function say(text) {
    banner.textContent = text;
    banner.hidden = !text;
  }
  function busy(part) {
    const active = document.activeElement;
    return active !== null && part.contains(active) && /^(INPUT|SELECT|TEXTAREA|BUTTON)$/.test(active.tagName);
  }
  function show(part, html) {
    part.innerHTML = html;
    part.dataset.updated = String(Date.now());
    delete part.pending;
  }
  for (const part of document.querySelectorAll("[data-live]")) {
    const source = new EventSource("/events/" + part.dataset.live);
    source.addEventListener("fragment", (event) => {
      say("");
      if (busy(part)) part.pending = event.data;
      else show(part, event.data);
    });
    part.addEventListener("focusout", (event) => {
      const staying = event.relatedTarget !== null && part.contains(event.relatedTarget);
      if (part.pending !== undefined && !staying) show(part, part.pending);
    });
    source.addEventListener("down", (event) => say("Coordinator not answering: " + event.data + " (retrying)"));
    source.addEventListener("gone", (event) => say(event.data));
    source.addEventListener("broken", (event) => say(event.data));
    source.addEventListener("error", () => {
      if (source.readyState !== EventSource.OPEN) say("Lost the connection to the dashboard (retrying)");
    });
  }
})();
