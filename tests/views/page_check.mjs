// Loads a self-contained page in headless Chromium (playwright-core from the e2e set-up) and
// prints what a person would meet: script errors, requests beyond the file, what is drawn and,
// for a graph, the details a click on a node shows, the ops Verify marked, and with `expand`
// what "Expand all" draws (boxes, frames, each op inside its group's frame).
//   node tests/views/page_check.mjs PAGE.html [NODE_ID|-] [expand] > result.json
import { createRequire } from 'node:module';
import { CACHE, CHROMIUM } from '../e2e/workbench.mjs';

const require = createRequire(`${CACHE}/pw/node_modules/x.js`);
const { chromium } = require('playwright-core');
const [file, click, expand] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
const out = { errors: [], requests: [] };
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 850 } });
  page.on('pageerror', (e) => out.errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && out.errors.push(m.text()));
  page.on('request', (r) => !r.url().startsWith('file:') && out.requests.push(r.url()));
  await page.goto(`file://${file}`);
  await page.waitForLoadState('load');
  out.charts = await page.locator('svg.chart').count();
  if (click !== undefined) {
    await page.waitForSelector('body[data-ready="1"]', { timeout: 15_000 });
    out.boxes = await page.locator('svg .item').count();
    out.statuses = await page.locator('svg .item').evaluateAll((els) => els.map((e) => e.dataset.status));
    out.verified = await page.locator('svg .item.verify').evaluateAll((els) => els.map((e) => e.dataset.id));
    out.header = await page.locator('header').innerText();
    if (click !== '-') {
      await page.locator(`svg .item[data-id="${click}"]`).click();
      await page.waitForSelector(`body[data-selected="${click}"]`, { timeout: 5_000 });
      out.details = await page.locator('aside').innerText();
    }
  }
  if (expand === 'expand') {
    const before = await page.evaluate(() => window.document.body.dataset.rendered);
    await page.getByRole('button', { name: 'Expand all' }).click();
    await page.waitForFunction((n) => window.document.body.dataset.rendered !== n, before, { timeout: 60_000 });
    out.expanded = await page.evaluate(() => {
      const box = (el) => el.getBoundingClientRect();
      const frames = new Map([...window.document.querySelectorAll('svg .frame')].map((f) => [f.dataset.id, box(f.querySelector('rect'))]));
      const within = (a, b) => a.left >= b.left - 0.5 && a.right <= b.right + 0.5 && a.top >= b.top - 0.5 && a.bottom <= b.bottom + 0.5;
      // Each drawn box lies inside the frame of every group drawn around it (`data-in`: its chain).
      const items = [...window.document.querySelectorAll('svg .item')];
      const outside = items.filter((i) => (i.dataset.in ?? '').split(' ').filter((g) => frames.has(g))
        .some((g) => !within(box(i.querySelector('rect')), frames.get(g)))).map((i) => i.dataset.id);
      return { boxes: items.length, frames: frames.size, edges: window.document.querySelectorAll('svg .edge:not(.stub)').length, outside, status: window.document.getElementById('status').textContent };
    });
  }
} catch (e) {
  out.errors.push(String(e).split('\n')[0]);
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
