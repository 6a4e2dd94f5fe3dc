// The donation page's entry: wires the parts together and starts the refresh rules. The parts: page.mjs
// (configuration, state, render), campaign.mjs (the sale's figures), network.mjs (which network: the
// chooser, switching the wallet), widget.mjs (wallet and donating), tokens.mjs (my tokens), staking.mjs,
// referrals.mjs, chooser.mjs (which wallet, when several are installed) and phone.mjs (the payment request for a wallet app). Data comes from api.mjs (the only module that
// knows the API's field names), the wallet from wallet.mjs, every amount goes through money.mjs.
//
// Refresh rules (the sale's specification): the token price on load; the ETH price on load, every
// minute and when Donate is pressed for ETH; the donor's data on load (wallet already connected),
// on connect and on Donate.
import { loadCampaign, loadEthPrice, loadTokenPrice, renderCampaign } from "./campaign.mjs";
import * as chooser from "./chooser.mjs";
import { chooseNetwork, renderNetwork, switchWallet } from "./network.mjs";
import { $, CAMPAIGN_EVERY_MS, ETH_PRICE_EVERY_MS, render, setRenderers, state } from "./page.mjs";
import { renderPaymentRequest } from "./phone.mjs";
import {
  attachReferral,
  attributeToAffiliate,
  dismissReferralOffer,
  readAffiliateCode,
  referralLink,
  renderReferralOffer,
} from "./referrals.mjs";
import { renderStaking, stake, unstake } from "./staking.mjs";
import { loadUserData, lookUp, nextPage, previousPage, renderAccount } from "./tokens.mjs";
import { connect, copyAddress, donate, pickWallet, renderTx, renderWidget, setAccount } from "./widget.mjs";
import * as wallet from "./wallet.mjs";

function start() {
  setRenderers([
    renderCampaign,
    renderNetwork,
    renderWidget,
    renderPaymentRequest,
    renderReferralOffer,
    renderTx,
    renderAccount,
  ]);
  state.affiliate.code = readAffiliateCode();
  chooser.start(() => {
    chooser.render($("wallet-list"), pickWallet);
    render();
  });

  for (const button of document.querySelectorAll("#network-choice button[data-chain]")) {
    button.addEventListener("click", () => chooseNetwork(button.dataset.chain));
  }
  $("amount").addEventListener("input", (event) => {
    state.amountText = event.target.value;
    renderWidget();
    renderPaymentRequest();
  });
  for (const input of document.querySelectorAll('input[name="asset"]')) {
    input.addEventListener("change", (event) => {
      state.asset = event.target.value;
      render();
    });
  }
  $("connect").addEventListener("click", connect);
  $("lookup-form").addEventListener("submit", lookUp);
  $("copy-address").addEventListener("click", copyAddress);
  $("switch-network").addEventListener("click", switchWallet);
  $("donate-form").addEventListener("submit", donate);
  $("affiliate-retry").addEventListener("click", () =>
    attributeToAffiliate(state.affiliate.retryHash, state.affiliate.retryChain),
  );
  $("stake-form").addEventListener("submit", stake);
  $("unstake").addEventListener("click", unstake);
  $("referral").addEventListener("click", referralLink);
  $("referral-attach").addEventListener("click", attachReferral);
  $("referral-dismiss").addEventListener("click", dismissReferralOffer);
  $("prev-page").addEventListener("click", previousPage);
  $("next-page").addEventListener("click", nextPage);

  wallet.onChange({
    accountsChanged: (account) => setAccount(account),
    // The wallet moved (its own UI, or our switch request): Donate follows; the network shown does not.
    chainChanged: (id) => {
      state.chainId = id;
      state.walletMessage = null;
      render();
    },
  });

  render();
  loadCampaign();
  loadTokenPrice();
  loadEthPrice();
  setInterval(loadEthPrice, ETH_PRICE_EVERY_MS);
  // The campaign's figures, pending ones included, move within a block of a donation (the head follower):
  // re-read them as often as the API lets a browser keep them (a conditional GET, 304 while unchanged). This
  // also brings the page back after an API outage.
  setInterval(loadCampaign, CAMPAIGN_EVERY_MS);
  let releaseCheckedAt = 0;
  setInterval(() => {
    if (state.user?.stakeStatus !== "unstaking") return;
    renderStaking(state.user);
    // Past the release time, look (at most once a minute) for the API to report the tokens released.
    const due = Date.parse(state.user.unstakeCompletesAt ?? "") <= Date.now();
    if (due && Date.now() - releaseCheckedAt > ETH_PRICE_EVERY_MS) {
      releaseCheckedAt = Date.now();
      loadUserData({ fresh: true });
    }
  }, 1000);
  // A wallet that already shared an account with this site reconnects without a prompt.
  wallet
    .connectedAccount()
    .then((account) => account && setAccount(account))
    .catch(() => {});
}

start();
