// vitrine admin UI enhancements. Every page works without this file; it
// adds copy buttons, the playground's live preview, and drag-and-drop
// uploads with progress.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  function ready(fn) {
    if (document.readyState !== "loading") fn();
    else document.addEventListener("DOMContentLoaded", fn);
  }

  // Copy buttons: <button data-copy="input-id">.
  function setupCopy() {
    document.querySelectorAll("[data-copy]").forEach(function (btn) {
      btn.addEventListener("click", function () {
        var field = document.getElementById(btn.getAttribute("data-copy"));
        if (!field) return;
        var done = function () {
          var label = btn.textContent;
          btn.textContent = "Copied";
          btn.classList.add("copied");
          setTimeout(function () { btn.textContent = label; btn.classList.remove("copied"); }, 1600);
        };
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(field.value).then(done, function () { field.select(); });
        } else {
          field.select();
          try { document.execCommand("copy"); done(); } catch (e) { /* the text stays selected */ }
        }
      });
    });
  }

  // Playground: refresh the preview, query and signed URL as fields change.
  function setupPlayground() {
    var form = document.getElementById("playground");
    if (!form) return;
    var endpoint = form.getAttribute("data-preview");
    var img = document.getElementById("pg-preview");
    var box = img.parentElement;
    var err = document.getElementById("pg-error");
    var query = document.getElementById("pg-query");
    var signed = document.getElementById("pg-url");
    var before = document.getElementById("pg-before");
    var size = document.getElementById("pg-size");
    var timer = null, seq = 0;
    function refresh() {
      var data = new URLSearchParams(new FormData(form));
      data.delete("op");
      var mine = ++seq;
      box.classList.add("loading");
      fetch(endpoint + "?" + data.toString(), { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (r) { return r.json(); })
        .then(function (p) {
          if (mine !== seq) return;
          query.value = p.query || "";
          signed.value = p.signedUrl || "";
          if (size) size.textContent = p.size || "—";
          if (before && p.before && before.getAttribute("src") !== p.before) {
            before.src = p.before;
            before.hidden = false;
          }
          if (p.error) {
            err.textContent = p.error;
            err.hidden = false;
            img.hidden = true;
            box.classList.remove("loading");
          } else {
            err.hidden = true;
            img.onload = function () { box.classList.remove("loading"); };
            img.src = p.preview;
            img.hidden = false;
          }
          var state = new URLSearchParams(data);
          history.replaceState(null, "", form.getAttribute("action") + "?" + state.toString());
        })
        .catch(function () { box.classList.remove("loading"); });
    }
    form.addEventListener("input", function (e) {
      if (e.target.name === "add" || e.target.name === "preset") return;
      clearTimeout(timer);
      timer = setTimeout(refresh, 350);
    });
    form.addEventListener("change", function (e) {
      if (e.target.tagName === "SELECT" && e.target.name !== "add" && e.target.name !== "preset") {
        clearTimeout(timer);
        refresh();
      }
    });
  }

  // Upload: drag and drop, several files at once, one request per file with
  // a progress bar each.
  function setupUpload() {
    var form = document.getElementById("upload-form");
    if (!form) return;
    var zone = document.getElementById("dropzone");
    var input = document.getElementById("up-files");
    var list = document.getElementById("upload-list");
    function uploadOne(file) {
      var li = document.createElement("li");
      li.className = "card upload-item";
      var name = document.createElement("span");
      name.className = "upload-name";
      name.textContent = file.name;
      var bar = document.createElement("progress");
      bar.max = 100;
      bar.value = 0;
      bar.setAttribute("aria-label", "Uploading " + file.name);
      li.appendChild(name);
      li.appendChild(bar);
      list.appendChild(li);
      var fd = new FormData();
      fd.append("csrf", form.elements.csrf.value);
      fd.append("user", form.elements.user.value);
      fd.append("format", "json");
      fd.append("images", file, file.name);
      var xhr = new XMLHttpRequest();
      xhr.open("POST", form.getAttribute("action"));
      xhr.upload.addEventListener("progress", function (e) {
        if (e.lengthComputable) bar.value = Math.round(100 * e.loaded / e.total);
      });
      xhr.addEventListener("load", function () {
        var res = null;
        try { res = JSON.parse(xhr.responseText)[0]; } catch (e) { res = { error: xhr.responseText || "Upload failed" }; }
        li.removeChild(bar);
        if (res && !res.error) {
          var thumb = document.createElement("img");
          thumb.src = res.thumb; thumb.alt = ""; thumb.width = 56; thumb.height = 56;
          li.insertBefore(thumb, name);
          var link = document.createElement("a");
          link.href = res.href; link.className = "mono"; link.textContent = res.id;
          var ok = document.createElement("span");
          if (res.existed) {
            ok.className = "badge"; ok.textContent = "Already existed";
          } else {
            ok.className = "badge badge-ok"; ok.textContent = "Uploaded";
          }
          li.appendChild(link);
          li.appendChild(ok);
        } else {
          var msg = document.createElement("span");
          msg.className = "field-error";
          msg.textContent = (res && res.error) || "Upload failed";
          li.appendChild(msg);
        }
      });
      xhr.addEventListener("error", function () {
        li.removeChild(bar);
        var msg = document.createElement("span");
        msg.className = "field-error";
        msg.textContent = "The connection failed.";
        li.appendChild(msg);
      });
      xhr.send(fd);
    }
    function uploadAll(files) {
      if (!form.elements.user.reportValidity()) return;
      Array.prototype.forEach.call(files, uploadOne);
    }
    ["dragenter", "dragover"].forEach(function (t) {
      zone.addEventListener(t, function (e) { e.preventDefault(); zone.classList.add("over"); });
    });
    ["dragleave", "drop"].forEach(function (t) {
      zone.addEventListener(t, function () { zone.classList.remove("over"); });
    });
    zone.addEventListener("drop", function (e) {
      e.preventDefault();
      if (e.dataTransfer && e.dataTransfer.files.length) uploadAll(e.dataTransfer.files);
    });
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      if (input.files.length) {
        uploadAll(input.files);
        input.value = "";
      } else {
        input.reportValidity();
      }
    });
  }

  ready(function () {
    setupCopy();
    setupPlayground();
    setupUpload();
  });
})();
