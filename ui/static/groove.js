// groove dashboard: live parts of a page follow server-sent events; nothing else runs here.
// An element with data-live="TOPIC" has its contents replaced by each `fragment` event of /events/TOPIC
// (HTML the server rendered and escaped). A `down` event (the coordinator is not answering) or a lost
// connection to the dashboard shows the banner; the next fragment hides it again.
"use strict";
(function () {
  const banner = document.getElementById("banner");
  function say(text) {
    banner.textContent = text;
    banner.hidden = !text;
  }
  for (const part of document.querySelectorAll("[data-live]")) {
    const source = new EventSource("/events/" + part.dataset.live);
    source.addEventListener("fragment", (event) => {
      part.innerHTML = event.data;
      part.dataset.updated = String(Date.now());
      say("");
    });
    source.addEventListener("down", (event) => say("Coordinator not answering: " + event.data + " (retrying)"));
    source.addEventListener("gone", (event) => say(event.data));
    source.addEventListener("error", () => {
      if (source.readyState !== EventSource.OPEN) say("Lost the connection to the dashboard (retrying)");
    });
  }
})();
