// Opens a stepsim HTML report in headless Chromium (Debian's, driven by puppeteer-core from report-ui/), waits for its
// charts, and prints as JSON what the page drew: {"errors": [console errors and page exceptions], "charts": [{"id",
// "datasets": [{"label", "drawn"}]}], "overlaps": [{"chart", "axis", "labels"}]}, "drawn" being the marks Chart.js laid
// out for the dataset, "overlaps" the neighbouring tick labels that cover each other. Saves a screenshot.
// Usage: node tests/report/check_report.mjs REPORT.html SCREENSHOT.png   (CHROMIUM=path overrides /usr/bin/chromium)
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(new URL('../../report-ui/package.json', import.meta.url));
const puppeteer = require('puppeteer-core');

const [report, screenshot] = process.argv.slice(2);
if (!report || !screenshot) {
  console.error('usage: check_report.mjs REPORT.html SCREENSHOT.png');
  process.exit(2);
}
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],  // root in CI; no GPU; small /dev/shm in containers
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 900 });
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(pathToFileURL(path.resolve(report)).href, { waitUntil: 'load' });
  let charts = null, overlaps = null;
  try {
    await page.waitForFunction('window.stepsimReport && window.stepsimReport.ready === true', { timeout: 20000 });
    charts = await page.evaluate(() => window.stepsimReport.drawn());
    overlaps = await page.evaluate(() => window.stepsimReport.overlaps());
  } catch (e) {
    errors.push('the page never finished drawing: ' + String(e));  // with the page's own errors above
  }
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(JSON.stringify({ errors, charts, overlaps }));
} finally {
  await browser.close();
}
