"""The catalog one page at a time, against a real `quiver serve`: it is a list endpoint like the others
(API.md: ?limit= and ?cursor=, with next_cursor), so it has a page helper like them."""

from __future__ import annotations

import unittest

import support

import quiver
from quiver import AgentClient

ENV: "support.Env"


def setUpModule() -> None:
    global ENV
    ENV = support.env()


class TestCatalogPages(unittest.TestCase):
    def setUp(self) -> None:
        self.client = AgentClient(api_key=ENV.api_key, base_url=ENV.base_url, timeout=30)

    def test_available_one_page_at_a_time(self) -> None:
        everything = [t.name for t in self.client.tools.available()]
        first = self.client.tools.available_page(limit=2)
        self.assertIsInstance(first, quiver.Page)
        self.assertIsInstance(first.items[0], quiver.AvailableTool)
        self.assertEqual(len(first.items), 2)
        self.assertIsNotNone(first.next_cursor)
        seen, page = [t.name for t in first], first
        while page.next_cursor:
            page = self.client.tools.available_page(limit=2, cursor=page.next_cursor)
            self.assertLessEqual(len(page.items), 2)
            seen.extend(t.name for t in page)
        self.assertEqual(seen, everything)  # each entry once, in the server's order
        self.assertEqual([t.name for t in self.client.tools.available(limit=2)], everything)

    def test_available_category_one_page_at_a_time(self) -> None:
        developer = [t.name for t in self.client.tools.available(category="developer")]
        self.assertGreater(len(developer), 2, developer)
        self.assertEqual([t.name for t in self.client.tools.available(category="developer", limit=1)], developer)
        one = self.client.tools.available_page("developer", limit=1)
        self.assertEqual([t.name for t in one], developer[:1])
        self.assertIsNotNone(one.next_cursor)


if __name__ == "__main__":
    unittest.main()
