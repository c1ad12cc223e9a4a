/* The video page's clips: moving a clip's start control seeks the clip shown above it to that
   second, so the control scrubs through the clip before the start is saved. Without this script
   the control and its Save button are a plain form, and the clip opens at the saved start. */
(function () {
  "use strict";
  Array.prototype.slice.call(document.querySelectorAll("input[data-clip-start]")).forEach(function (range) {
    var video = document.getElementById(range.getAttribute("data-clip-start"));
    var out = document.getElementById(range.id + "-out");
    function seek() {
      var seconds = parseFloat(range.value) || 0;
      if (out) { out.textContent = seconds.toFixed(1); }
      if (!video) { return; }
      video.pause();
      if (video.readyState >= 1) { video.currentTime = seconds; }
      else { video.addEventListener("loadedmetadata", function () { video.currentTime = parseFloat(range.value) || 0; }, { once: true }); }
    }
    range.addEventListener("input", seek);
    range.addEventListener("change", seek);
  });
}());
