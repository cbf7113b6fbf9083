"""The review queue's settings (``[review]`` in judge.toml): the recall the queue must deliver
and how it learns. None of them changes a verdict, so none is part of the judge version: the
operating point they select decides only who reads what (:mod:`judge.review.triage`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ReviewSettings(BaseModel):
    """``[review]``: the operating point's target and the queue's informative share."""

    model_config = ConfigDict(extra="forbid")

    #: the share of problem claims (people did not label them supported) the queue must catch
    target_recall: float = Field(default=0.9, gt=0.0, lt=1.0)
    #: the confidence with which the threshold set from gold states that recall
    confidence: float = Field(default=0.9, gt=0.0, lt=1.0)
    #: the share of a queue given to passed claims nearest the threshold (the reviews that
    #: teach the most), with their inclusion probabilities recorded
    informative_share: float = Field(default=0.1, ge=0.0, lt=1.0)
    #: new reviews in a domain after which `judge fit --domain` is proposed
    refit_after: int = Field(default=40, ge=1)
    #: people who review each queue item: 1 (a seeded share, ``--double-fraction``, gets a
    #: second review) or 2 (every item is reviewed twice, disagreements adjudicated); the
    #: review pages give an item to at most as many people at once as reviews it needs
    reviewers_per_item: int = Field(default=1, ge=1, le=2)

    def double_fraction(self, asked: float) -> float:
        """The share of items that get a second review: every item with two reviewers per
        item, else ``asked``."""
        return 1.0 if self.reviewers_per_item == 2 else asked
