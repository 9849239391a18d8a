// Loads a page in a running headless Chromium (--remote-debugging-port) over
// the DevTools protocol, waits until the /ui page has loaded its data, then
// prints the page's timings as JSON, measured in real time (no virtual time).
// Usage: node --experimental-websocket bench/ui-cdp.js PORT URL
"use strict";
const [port, url] = process.argv.slice(2);
async function main() {
  let targets;
  for (let i = 0; i < 100; i++) {
    try { targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json(); break; }
    catch (e) { await new Promise((r) => setTimeout(r, 100)); }
  }
  const page = targets.find((t) => t.type === "page");
  const ws = new WebSocket(page.webSocketDebuggerUrl);
  let id = 0; const waiting = new Map();
  ws.onmessage = (m) => { const d = JSON.parse(m.data); if (waiting.has(d.id)) { waiting.get(d.id)(d); waiting.delete(d.id); } };
  await new Promise((r) => { ws.onopen = r; });
  const send = (method, params) => new Promise((r) => { const n = ++id; waiting.set(n, r); ws.send(JSON.stringify({ id: n, method, params })); });
  const evaluate = async (expr) => (await send("Runtime.evaluate", { expression: expr, returnByValue: true, awaitPromise: true })).result.result.value;
  const t0 = Date.now();
  await send("Page.navigate", { url });
  let st = null;
  while (Date.now() - t0 < 60000) {
    st = await evaluate("(() => { const s = document.getElementById('stats'); return s && s.dataset.loads ? Object.assign({}, s.dataset) : null; })()");
    if (st) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  st.pageMs = Date.now() - t0;
  // ten scroll redraws through the middle of the map, each timed by the page
  st.scrollDrawMs = await evaluate(`(async () => { const m = document.getElementById('map'), out = [];
    for (let i = 1; i <= 10; i++) { m.scrollTop = m.scrollHeight * i / 11; await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      out.push(Number(document.getElementById('stats').dataset.drawMs)); } return out; })()`);
  console.log(JSON.stringify(st));
  ws.close();
}
main().catch((e) => { console.error(e); process.exit(1); });
