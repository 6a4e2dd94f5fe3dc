from tests.web.browser import anvil_node, browser, plain_page, wallet_page

__all__ = ["anvil_node", "browser", "plain_page", "wallet_page"]
